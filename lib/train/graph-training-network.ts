/**
 * @file A run's network trained by the graph trainer (training-network.ts): dmlkit's model kinds
 * converted to ONNX, or a `model.kind: "onnx"` network, on {@link GraphNetwork} (graph-network.ts);
 * the loss in the step graph where it has an ONNX form, else dmlkit's loss code between two runs; the
 * loss's own parameters stepped by their optimiser (loss-optimizer.ts). A resume restores the
 * trained network (the TensorFlow.js model's weights, or the checkpoint's ONNX network), the graph
 * optimiser's slots and step count, and the loss's state (loss-state.ts).
 */
import type * as tf from '@tensorflow/tfjs';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { ProviderChoice } from '../onnx/devices.js';
import type { InputDraw } from './batch-step.js';
import { loadCheckpoint, loadOnnxCheckpoint, type CheckpointContents, type LoadedCheckpoint, type LoadedOnnxCheckpoint } from './checkpoint-io.js';
import { GraphNetwork } from './graph-network.js';
import { restoreLossState } from './loss-state.js';
import { nonFiniteModelWeight } from './tfjs-network.js';
import type { TrainingData } from './training-data.js';
import type { BatchOutcome, NetworkSetup, StepSettings, TrainingNetwork } from './training-network.js';

/** A network trained by the graph trainer (see the file comment). */
export class GraphTrainingNetwork implements TrainingNetwork {
  readonly backend = 'onnx';

  private constructor(
    private readonly setup: NetworkSetup,
    private readonly graph: GraphNetwork,
    /** The TensorFlow.js model the trained values are written back into, for dmlkit's model kinds. */
    private readonly model: tf.LayersModel | undefined,
  ) {}

  /** Opens the network of `setup` on the graph trainer, restored from `setup.checkpointDir` when given. */
  static async open(setup: NetworkSetup): Promise<GraphTrainingNetwork> {
    const model = 'model' in setup.network ? setup.network.model : undefined;
    let loaded: LoadedCheckpoint | LoadedOnnxCheckpoint | undefined;
    if (setup.checkpointDir !== undefined) loaded = model ? await loadCheckpoint(setup.checkpointDir, { into: model }) : await loadOnnxCheckpoint(setup.checkpointDir);
    const { device, microBatch } = setup.graph;
    const batchSize = setup.firstBatch.length;
    let graph: GraphNetwork;
    if (model) {
      graph = await GraphNetwork.create(model, setup.optimizer, device, batchSize, setup.loss, microBatch);
    } else {
      // For a resume the trainer gives the checkpoint's network (its model.onnx).
      const network = setup.network as { onnx: Uint8Array; name: string };
      graph = await GraphNetwork.fromOnnx(network.onnx, setup.inputShape, setup.optimizer, device, batchSize, network.name, {
        loss: setup.loss,
        freezeUpTo: setup.graph.freezeUpTo,
        backboneLearningRateScale: setup.graph.backboneLearningRateScale,
        frozenBatchNorm: setup.graph.frozenBatchNorm,
        microBatch,
      });
    }
    if (loaded && setup.checkpointDir !== undefined) {
      graph.trainer.restore(loaded.arrays ?? new Map(), (loaded.state as { graphSteps?: number } | undefined)?.graphSteps ?? 0);
      await restoreLossState(setup.loss, setup.lossOptimizer, loaded, setup.checkpointDir);
    }
    return new GraphTrainingNetwork(setup, graph, model);
  }

  get device(): ProviderChoice | undefined {
    const trainer = this.graph.trainer;
    return trainer.provider ? { provider: trainer.provider, attempts: [...trainer.attempts] } : undefined;
  }

  async trainBatch(rows: Int32Array, draw: InputDraw, step: StepSettings): Promise<BatchOutcome> {
    const { batch, trainData, loss, lossOptimizer } = this.setup;
    lossOptimizer?.setLearningRate(step.learningRate);
    if (step.momentum !== undefined) lossOptimizer?.setMomentum(step.momentum);
    const x = batch.inputsOf(rows, draw);
    try {
      const labels = Int32Array.from(rows, (r) => trainData.labels[r] as number);
      const result = await this.graph.trainBatch(x, labels, loss, lossOptimizer?.optimizer, step.learningRate, step.momentum);
      if (result.validCount > 0 && Number.isFinite(result.value)) lossOptimizer?.decay(step.learningRate);
      return result;
    } finally {
      x.dispose();
    }
  }

  async embedAll(data: TrainingData): Promise<EmbeddingSet> {
    return this.graph.embedAll(data, this.setup.inputShape);
  }

  async settle(): Promise<void> {
    await this.graph.synchronize();
    this.graph.writeBack();
  }

  nonFiniteWeight(): string | undefined {
    return this.model ? nonFiniteModelWeight(this.model) : this.graph.nonFiniteWeight();
  }

  checkpoint(): { contents: Omit<CheckpointContents, 'state'>; state: { graphSteps?: number } } {
    const arrays = new Map([...this.graph.slots(), ...(this.setup.lossOptimizer?.arrays() ?? [])]);
    return {
      contents: { model: this.model ?? this.graph.trainer.exportModel(), lossOptimizer: this.setup.lossOptimizer?.optimizer, ...(arrays.size > 0 ? { arrays } : {}) },
      state: { graphSteps: this.graph.trainer.stepCount },
    };
  }
}
