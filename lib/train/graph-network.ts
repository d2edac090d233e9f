/**
 * @file The `onnx` training backend: the run's network, built by TensorFlow.js from its spec, is
 * converted to ONNX by the exporter's converters (so what is exported is what was trained) and
 * trained by the graph trainer (lib/engine/graph-trainer/), one onnxruntime run per step on the device
 * `device` picks. The loss stays dmlkit's TensorFlow.js code: it gives the loss and its gradient with
 * respect to the embeddings on the CPU (a [batch, dim] matrix), which the step graph back-propagates.
 *
 * The trained values are written back into the TensorFlow.js model at each validation point, so that
 * validation, checkpoints and `dml export` work on the model as for every other backend; a checkpoint
 * also keeps the graph optimiser's slots and step count, so a resume continues exactly.
 *
 * The optimiser follows PyTorch (docs/methods.md has the formulas): `adam` is torch's Adam (ε 1e-8),
 * with `weightDecay` its AdamW (decoupled decay, applied before the step); `momentum` and `sgd` are
 * torch's SGD with the decay decoupled (SGDW). Weight decay applies to kernels only, as on the other
 * backends.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import { convertLayersModel } from '../engine/tfjs/tfjs-to-onnx.js';
import type { WeightSource } from '../engine/tfjs/onnx-graph.js';
import { permuteArray } from '../util/permute-array.js';
import { graphLossOf } from './losses/registry.js';
import { GraphTrainer, type GraphTrainerOptions } from '../engine/graph-trainer/graph-trainer.js';
import { HEAD_WEIGHT_PREFIX } from '../engine/graph/embedding-network.js';
import type { GraphOptimizerSettings } from '../engine/graph-trainer/optimizer-graph.js';
import { encodeModel } from '../onnx/builder.js';
import type { DeviceChoice } from '../onnx/devices.js';
import type { OptimizerConfig } from './optimizer.js';
import { optimizerEntry } from './optimizers/registry.js';
import type { MetricLoss } from './losses/metric-loss.js';
import type { TrainingData } from './training-data.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import ort from '../onnx/ort.js';
import { concatFloat32 } from '../util/concat.js';

/** The graph optimiser for a run's `optimizer` section (its entry in lib/train/optimizers/; see the file comment). */
export function graphOptimizerSettings(optimizer: OptimizerConfig): GraphOptimizerSettings {
  return optimizerEntry(optimizer.kind).graph(optimizer);
}

/** One batch's loss. */
export interface GraphBatch {
  /** The loss value (NaN or infinite when training diverged: then nothing was updated). */
  value: number;
  validCount: number;
  totalCount: number;
}

/** A loss value with its gradients (see {@link embeddingLossGradient}). */
export interface EmbeddingLossGradient extends GraphBatch {
  /** d loss / d embeddings, row-major [batch, dim]. */
  embeddings: Float32Array;
  /** d loss / d each of the loss's own variables, by variable name (the caller disposes them). */
  lossVariables: tf.NamedTensorMap;
}

/**
 * The loss of `embeddings` (row-major [labels.length, dim], L2-normalised) and its gradient with
 * respect to them and to the loss's own variables, computed by dmlkit's loss code on TensorFlow.js.
 * Without a valid tuple the value is 0 and the gradients are zeros.
 */
export function embeddingLossGradient(loss: MetricLoss, embeddings: Float32Array, labels: Int32Array): EmbeddingLossGradient {
  const batch = labels.length;
  const variable = tf.variable(tf.tensor2d(embeddings, [batch, embeddings.length / batch]), true);
  const counts = { valid: 0, total: 0 };
  const { value, grads } = tf.variableGrads(() => {
    const result = loss.compute(variable, labels);
    counts.valid = result.validCount;
    counts.total = result.totalCount;
    return counts.valid > 0 ? result.loss : (tf.mul(tf.sum(variable), 0) as tf.Scalar);
  }, [variable, ...loss.trainableVariables]);
  try {
    return {
      value: value.dataSync()[0] as number,
      validCount: counts.valid,
      totalCount: counts.total,
      embeddings: (grads[variable.name] as tf.Tensor).dataSync() as Float32Array,
      lossVariables: Object.fromEntries(loss.trainableVariables.map((v) => [v.name, grads[v.name] as tf.Tensor])),
    };
  } finally {
    tf.dispose([value, variable, grads[variable.name] as tf.Tensor]);
  }
}

/**
 * The options of a graph trainer for `loss` and `microBatch`: a loss with an ONNX form compiled into
 * the step (one graph run per step), unless the batches run in micro-batches, whose loss must see the
 * whole batch (then it runs on TensorFlow.js between the passes).
 */
function stepLoss(loss: MetricLoss | undefined, microBatch: number | undefined): Pick<GraphTrainerOptions, 'loss' | 'microBatch'> {
  if (microBatch !== undefined) return { microBatch };
  const graphLoss = loss ? graphLossOf(loss) : undefined;
  return graphLoss ? { loss: graphLoss } : {};
}

/** A run's network on the graph trainer. */
export class GraphNetwork {
  private constructor(
    readonly trainer: GraphTrainer,
    private readonly sources: ReadonlyMap<string, WeightSource>,
  ) {}

  /**
   * Converts `model` and opens its graph trainer on `device` (an operator the graph trainer cannot
   * differentiate fails here, before any work); with `batchSize`, also the sessions for batches of that
   * size (a device that cannot run them fails here too). With `loss`, a loss that has an ONNX form
   * (lib/train/graph-loss.ts) is compiled into the step: one graph run per step. `sessions`: the
   * sessions' intra-op threads (onnxruntime's default when absent) and whether the CPU's blocked
   * convolutions are used ({@link GraphTrainerOptions.blockedConvolutions}, default true).
   */
  static async create(
    model: tf.LayersModel,
    optimizer: OptimizerConfig,
    device: DeviceChoice,
    batchSize?: number,
    loss?: MetricLoss,
    microBatch?: number,
    sessions: Pick<GraphTrainerOptions, 'threads' | 'blockedConvolutions'> = {},
  ): Promise<GraphNetwork> {
    const converted = convertLayersModel(model, { layout: 'NHWC', inputName: 'input' });
    const bytes = encodeModel({ graphName: model.name, inputs: converted.inputs, outputs: converted.outputs, nodes: converted.nodes, initializers: converted.initializers });
    const trained = [...converted.weightSources].filter(([, s]) => s.variable.trainable).map(([name]) => name);
    const itemDims = (model.inputs[0]?.shape.slice(1) ?? []) as number[];
    const trainer = await GraphTrainer.create({ model: bytes, name: `network ${model.name}`, itemDims, optimizer: graphOptimizerSettings(optimizer), trained, device, ...stepLoss(loss, microBatch), ...sessions });
    if (batchSize !== undefined) await trainer.prepare(batchSize);
    return new GraphNetwork(trainer, converted.weightSources);
  }

  /**
   * Trains on batch `x` (the model's input, [batch, ...]) with `labels`: the training forward gives
   * the embeddings, `loss` their gradient, the step graph the update, applied when the batch has a
   * valid tuple and a finite loss. The loss's own variables (the margin loss's β, proxies) are updated by
   * `lossOptimizer` (required when the loss has any). When the loss was compiled into the step (`create`'s `loss`), all of it is one run.
   * `momentum`: the step's Adam β1 or SGD momentum when the schedule sets it (OneCycle's `cycleMomentum`).
   */
  async trainBatch(x: tf.Tensor, labels: Int32Array, loss: MetricLoss, lossOptimizer: tf.Optimizer | undefined, lr: number, momentum?: number): Promise<GraphBatch> {
    const images = x.dataSync() as Float32Array;
    if (this.trainer.hasFusedStep) {
      const result = await this.trainer.trainStep(images, labels, lr, momentum);
      return { value: result.value, validCount: result.validCount, totalCount: labels.length };
    }
    const gradient = embeddingLossGradient(loss, await this.trainer.forward(images), labels);
    try {
      if (gradient.validCount > 0 && Number.isFinite(gradient.value)) {
        await this.trainer.step(images, gradient.embeddings, lr, momentum);
        if (loss.trainableVariables.length > 0) {
          if (!lossOptimizer) throw new DmlError('E_ARG', `the ${loss.name} loss has parameters of its own: trainBatch needs their optimizer`);
          lossOptimizer.applyGradients(gradient.lossVariables);
        }
      }
      return { value: gradient.value, validCount: gradient.validCount, totalCount: gradient.totalCount };
    } finally {
      tf.dispose(gradient.lossVariables);
    }
  }

  /**
   * A run's `model.kind: "onnx"` network (already prepared by prepareEmbeddingNetwork: NHWC input
   * `itemDims`, embeddings out, the new head's weights named `head/...`) on its graph trainer; with
   * `batchSize`, the sessions for batches of that size are opened now. `options.loss` as in
   * {@link create}; `options.freezeUpTo` leaves the weights up to that value untrained
   * ({@link GraphTrainerOptions.freezeUpTo}); `options.backboneLearningRateScale` trains every weight
   * but the head's at that factor of the rate ({@link GraphTrainerOptions.learningRateScale});
   * `options.frozenBatchNorm` normalises with the running statistics ({@link GraphTrainerOptions.frozenBatchNorm});
   * `options.microBatch` runs larger batches in micro-batches ({@link GraphTrainerOptions.microBatch}).
   */
  static async fromOnnx(
    bytes: Uint8Array,
    itemDims: readonly number[],
    optimizer: OptimizerConfig,
    device: DeviceChoice,
    batchSize: number,
    name: string,
    options: { loss?: MetricLoss | undefined; freezeUpTo?: string | undefined; backboneLearningRateScale?: number | undefined; frozenBatchNorm?: boolean | undefined; microBatch?: number | undefined } = {},
  ): Promise<GraphNetwork> {
    const scale = options.backboneLearningRateScale;
    const trainer = await GraphTrainer.create({
      model: bytes,
      name,
      itemDims,
      optimizer: graphOptimizerSettings(optimizer),
      device,
      ...stepLoss(options.loss, options.microBatch),
      ...(options.freezeUpTo !== undefined ? { freezeUpTo: options.freezeUpTo } : {}),
      ...(options.frozenBatchNorm !== undefined ? { frozenBatchNorm: options.frozenBatchNorm } : {}),
      ...(scale !== undefined ? { learningRateScale: (param: string) => (param.startsWith(HEAD_WEIGHT_PREFIX) ? 1 : scale) } : {}),
    });
    await trainer.prepare(batchSize);
    return new GraphNetwork(trainer, new Map());
  }

  /**
   * Embeds every row of `data` (inputs of the network's item shape) with the trained network in
   * inference mode (running statistics), by onnxruntime in batches of 256.
   */
  async embedAll(data: TrainingData, itemDims: readonly number[]): Promise<EmbeddingSet> {
    const session = await ort.InferenceSession.create(this.trainer.exportModel());
    try {
      const per = itemDims.reduce((a, b) => a * b, 1);
      const chunks: Float32Array[] = [];
      let dim = 0;
      for (let start = 0; start < data.count; start += 256) {
        const rows = Math.min(256, data.count - start);
        const input = new ort.Tensor('float32', data.inputs.slice(start * per, (start + rows) * per), [rows, ...itemDims]);
        const out = (await session.run({ [session.inputNames[0] as string]: input }))[session.outputNames[0] as string] as ort.Tensor;
        dim = out.dims[1] as number;
        chunks.push(out.data as Float32Array);
      }
      return { vectors: concatFloat32(chunks), count: data.count, dim, ids: data.ids, labels: Array.from(data.labels, (c) => data.labelNames[c] as string) };
    } finally {
      await session.release();
    }
  }

  /**
   * Reads the trained state back from the device, where the graph trainer kept it between steps
   * (WebGPU); before {@link nonFiniteWeight}, {@link writeBack}, {@link slots}, {@link embedAll} and a
   * checkpoint of the trained graph. Nothing to do on the CPU provider.
   */
  async synchronize(): Promise<void> {
    await this.trainer.synchronize();
  }

  /** The name of a trained weight or running statistic holding NaN or Inf, or undefined. */
  nonFiniteWeight(): string | undefined {
    for (const [name, values] of this.trainer.weights()) if (values.some((v) => !Number.isFinite(v))) return name;
    return undefined;
  }

  /** Writes the trained weights and running statistics back into the TensorFlow.js model. */
  writeBack(): void {
    for (const [name, source] of this.sources) {
      const values = this.trainer.value(name);
      if (!values) throw new DmlError('E_MODEL', `the graph trainer holds no value for ${name}`);
      const shape = source.variable.shape as number[];
      const perm = source.perm;
      const restored = perm ? permuteArray(values, perm.map((p) => shape[p] as number), perm.map((_, i) => perm.indexOf(i))) : values;
      const next = tf.tensor(restored, shape);
      source.variable.write(next);
      next.dispose();
    }
  }

  /** The graph optimiser's slots, for a checkpoint. */
  slots(): Map<string, Float32Array> {
    const slots = new Map<string, Float32Array>();
    for (const param of this.trainer.trainedNames) {
      for (const [slot, values] of Object.entries(this.trainer.slots(param))) if (values) slots.set(`${param}:${slot}`, values);
    }
    return slots;
  }
}
