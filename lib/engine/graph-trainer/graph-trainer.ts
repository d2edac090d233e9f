/**
 * @file The graph trainer: trains the weights of an ONNX forward graph with onnxruntime, one graph
 * run per step (lib/engine/graph-trainer/step-graph.ts), on any execution provider onnxruntime-node
 * offers (`device` as `dml eval` chooses it).
 *
 * A step is two runs: the training forward gives the embeddings and keeps the activations the
 * backward needs; the caller computes the loss and its gradient with respect to the embeddings
 * (dmlkit's losses, unchanged); the step graph back-propagates that gradient from the kept activations
 * and applies the optimiser. The weights, optimiser slots, running statistics and kept activations go
 * from one run to the next as onnxruntime tensors: on WebGPU they stay in device memory (IO binding,
 * trainer-state.ts) and are read back only by {@link GraphTrainer.synchronize}; on the CPU provider
 * they are JavaScript memory anyway.
 *
 * ```ts
 * const trainer = await GraphTrainer.create({ model: bytes, itemDims: [3, 64, 64], optimizer: { kind: 'adam' } });
 * const embeddings = await trainer.forward(images);
 * const gradient = ...; // d loss / d embeddings
 * await trainer.step(images, gradient, 1e-3);
 * const trained = trainer.exportModel(); // the forward graph with the trained weights
 * ```
 */
import { DmlError, invalidParameterError } from '../../errors.js';
import { decodeModel, encodeModel, floatTensor, int64Value, type ModelProto, type TensorProto } from '../../onnx/builder.js';
import type { DeviceChoice, ExecutionProviderName, ProviderAttempt } from '../../onnx/devices.js';
import { nchwcBlockSize } from '../../onnx/nchwc.js';
import ort from '../../onnx/ort.js';
import { createSession, type CreatedSession } from '../../onnx/session.js';
import { concatFloat32 } from '../../util/concat.js';
import { withConstantInitializers } from '../graph/constant-initializers.js';
import { elementCount, readOnnxGraph, type IrGraph, type IrNode, type IrTensor } from '../graph/onnx-ir.js';
import { createGraphOptimizer, type GraphOptimizer, type GraphOptimizerSettings } from './optimizer-graph.js';
import { compileStep, defaultTrainedInitializers, initializersUpTo, runningStatistics, slotName, type StepGraphIo } from './step-graph.js';
import { FROZEN_BATCH_NORM_ATTRIBUTE } from '../autodiff/rules/normalization.js';
import { releaseUnkept, TrainerState } from './trainer-state.js';

/**
 * A loss written as ONNX nodes after the network's output, so that a training step is one graph run
 * (the fused step of step-graph.ts): no activation leaves onnxruntime and no loss runs in JavaScript.
 */
export interface GraphLoss {
  /** The loss's name, for errors. */
  readonly name: string;
  /**
   * The nodes computing the loss of the `batch` embeddings in value `embeddings` ([batch, dim]): they
   * read the data inputs `inputs` names (with their dimensions) and the `constants`, and write the
   * scalar `loss` and the scalar `validCount` (the anchors or tuples it counts; a step with none, or
   * with a loss that is not finite, is not applied). Value names start with `loss/`.
   */
  build(embeddings: string, batch: number): {
    nodes: IrNode[];
    constants: ReadonlyMap<string, IrTensor>;
    inputs: ReadonlyMap<string, readonly number[]>;
    loss: string;
    validCount: string;
  };
  /** The values of those data inputs for a batch with `labels`. */
  inputValues(labels: Int32Array): ReadonlyMap<string, Float32Array>;
}

/** What {@link GraphTrainer.trainStep} did. */
export interface FusedStepResult {
  /** The loss of the batch (before the update). */
  readonly value: number;
  readonly validCount: number;
  /** Whether the update was applied (a valid tuple and a finite loss). */
  readonly applied: boolean;
}

/** Options of {@link GraphTrainer.create}. */
export interface GraphTrainerOptions {
  /** The forward network: an ONNX model's bytes, one float32 image input, the embeddings as output 0. */
  readonly model: Uint8Array;
  /** Names the model in errors (a path). */
  readonly name?: string;
  /**
   * The dimensions of one input item without the batch axis, e.g. [3, 64, 64]. The batch size is read
   * from each call; a step graph is compiled for each batch size the first time it is met.
   */
  readonly itemDims: readonly number[];
  readonly optimizer: GraphOptimizerSettings;
  /** The initializers to train; default: the weights of parametric operators (see defaultTrainedInitializers). */
  readonly trained?: readonly string[];
  /**
   * Freeze the network up to this value (a node output, e.g. a backbone stage's): the weights it is
   * computed from are not trained (the backward pass stops there when nothing before it trains).
   * BatchNormalization layers before it still normalise with batch statistics and update their
   * running statistics.
   */
  readonly freezeUpTo?: string;
  /**
   * Every BatchNormalization normalises with its running statistics, which stay as they are (PyTorch's
   * BatchNorm in `eval()` inside a training model; Roth et al.'s frozen BN); its scale and bias still
   * train. Default false: batch statistics, running statistics updated.
   */
  readonly frozenBatchNorm?: boolean;
  /**
   * The factor of the step's learning rate that trained parameter `param` steps at (PyTorch's
   * parameter groups; e.g. 0.1 for a pretrained backbone's weights); default 1 for every parameter.
   */
  readonly learningRateScale?: (param: string) => number;
  /** Which trained parameters take weight decay; default: those of rank 2 or more (kernels, not biases or normalisation parameters). */
  readonly decayed?: (name: string, dims: readonly number[]) => boolean;
  /** Execution provider; default `cpu`. */
  readonly device?: DeviceChoice;
  /** Intra-op threads; onnxruntime's default when omitted. */
  readonly threads?: number;
  /** Keep each step's parameter gradients ({@link GraphTrainer.gradient}); default false. */
  readonly recordGradients?: boolean;
  /** A loss to compile into the step ({@link GraphTrainer.trainStep}); {@link GraphTrainer.forward} and {@link GraphTrainer.step} work either way. */
  readonly loss?: GraphLoss;
  /**
   * Run a batch of more than this many items in micro-batches (gradient accumulation), so that a
   * graph run holds the activations of one micro-batch: {@link GraphTrainer.forward} embeds the batch
   * micro-batch by micro-batch keeping no activations, the caller's loss sees the whole batch, and
   * {@link GraphTrainer.step} runs each micro-batch's forward again with its backward, sums the
   * parameters' gradients and applies the optimiser once. The same step as the whole batch's (within
   * float rounding) for a network without batch statistics (e.g. with `frozenBatchNorm`); with
   * batch-statistics BatchNorm each micro-batch is normalised by its own statistics and updates the
   * running statistics once, in order, as PyTorch's gradient accumulation does. Not with `loss` (a
   * loss in a graph run sees only that run's items). Default: every batch in one run.
   */
  readonly microBatch?: number;
  /**
   * `device` (default): on a provider with IO binding (WebGPU) the state and the kept activations stay
   * in device memory between runs, read back by {@link GraphTrainer.synchronize}; `host`: every output
   * comes back to JavaScript memory after each run. The same numbers either way; on the CPU provider
   * the same runs.
   */
  readonly stateResidency?: 'device' | 'host';
  /**
   * On the CPU provider, run the convolutions in onnxruntime's blocked layout (NCHWc, lib/onnx/nchwc.ts;
   * lib/engine/autodiff/rules/blocked-convolution.ts) where they fit: the same gradients within float
   * rounding, Recipe R's fused step 1.1-1.9x faster on 2 cores (docs/graph-trainer.md, "Speed"). Default
   * true; false compiles ONNX's Conv, as for every other provider.
   */
  readonly blockedConvolutions?: boolean;
}

/** The fused step of one batch size. */
interface FusedGraph {
  readonly io: StepGraphIo;
  readonly session: ort.InferenceSession;
  readonly loss: string;
  readonly validCount: string;
  readonly dataInputs: ReadonlyMap<string, readonly number[]>;
}

/**
 * onnxruntime's optimisation level for the training graphs: `extended`, without the CPU provider's NCHWc
 * rewrite, which takes only convolutions with constant weights: in a step graph the unblocked weight
 * gradients' im2col convolutions, whose reorders took about 94 ms of Recipe R's fused step and saved less
 * (docs/graph-trainer.md, "Speed"). The blocked layout is written by the trainer itself where it pays
 * (lib/engine/autodiff/rules/blocked-convolution.ts).
 */
const STEP_GRAPH_OPTIMIZATION = 'extended';

/** The two graphs of one batch size. */
interface BatchGraphs {
  readonly io: StepGraphIo;
  readonly forward: ort.InferenceSession;
  readonly step: ort.InferenceSession;
}

/** The graphs of one micro-batch size ({@link GraphTrainerOptions.microBatch}). */
interface MicroBatchGraphs {
  readonly io: StepGraphIo;
  /** The training forward without kept activations (the first pass). */
  readonly embed: ort.InferenceSession;
  /** The training forward with them (the second pass). */
  readonly forward: ort.InferenceSession;
  /** The backward alone: each trained parameter's gradient. */
  readonly gradient: ort.InferenceSession;
  /** The backward of a later micro-batch: its gradients added to the earlier ones' sum. */
  readonly gradientSum: ort.InferenceSession;
  /** The gradient graphs' output of each trained parameter. */
  readonly gradients: Readonly<Record<string, string>>;
  /** The gradient-sum graph's input of each trained parameter (the sum so far). */
  readonly gradientSums: Readonly<Record<string, string>>;
}

/** The first pass of a batch run in micro-batches: its embeddings and the running statistics after its last micro-batch. */
interface MicroBatchForward {
  readonly images: Float32Array;
  readonly atStep: number;
  readonly embeddings: Float32Array;
  /** Where the runs left them: device memory on WebGPU. */
  readonly runningStatistics: ReadonlyMap<string, ort.Tensor>;
}

/** The forward run of the batch a step is about to train on. */
interface ForwardRun {
  readonly images: Float32Array;
  /** The optimiser steps taken when it ran (a later step changed the weights it used). */
  readonly atStep: number;
  readonly outputs: ort.InferenceSession.OnnxValueMapType;
}

/** A network being trained by whole-step ONNX graphs. */
export class GraphTrainer {
  /** The provider running the step graphs (the first batch size's choice, kept for the others). */
  provider: ExecutionProviderName | undefined;
  /** Each provider tried when the first graph was opened. */
  attempts: readonly ProviderAttempt[] = [];
  /**
   * The channel block of the blocked CPU convolutions the graphs were compiled with
   * ({@link GraphTrainerOptions.blockedConvolutions}); undefined before the first graph is opened, on
   * another provider, or with ONNX's Conv.
   */
  nchwcBlock: number | undefined;
  /** Optimiser steps taken. */
  private steps = 0;
  private readonly lastGradients = new Map<string, Float32Array>();
  private readonly graphs = new Map<number, Promise<BatchGraphs>>();
  private readonly fusedGraphs = new Map<number, Promise<FusedGraph>>();
  private readonly microGraphs = new Map<number, Promise<MicroBatchGraphs>>();
  /** The optimiser's graph of a step in micro-batches (the same for every micro-batch size). */
  private updateGraph: Promise<ort.InferenceSession> | undefined;
  private lastForward: ForwardRun | undefined;
  private lastMicroForward: MicroBatchForward | undefined;

  private constructor(
    private readonly graph: IrGraph,
    private readonly options: GraphTrainerOptions,
    private readonly inputName: string,
    private readonly outputName: string,
    private readonly trained: readonly string[],
    private readonly decayed: ReadonlySet<string>,
    private readonly learningRateScales: ReadonlyMap<string, number>,
    private readonly optimizer: GraphOptimizer,
    private readonly state: TrainerState,
    /** The model as given, with its constant tensors as initializers of their own: what {@link exportModel} writes the trained values into. */
    private readonly source: ModelProto,
  ) {}

  /**
   * Reads the model and checks what it can before any graph is compiled: one float32 input whose
   * item dimensions match `itemDims`, an output, weights to train, the optimiser settings, and a
   * gradient rule for every operator between the weights and the output (compiled at batch size 2).
   */
  static async create(options: GraphTrainerOptions): Promise<GraphTrainer> {
    const name = options.name ?? 'model';
    const read = readOnnxGraph(options.model, name);
    const decoded = decodeModel(options.model, name);
    const source: ModelProto = { ...decoded, graph: withConstantInitializers(decoded.graph ?? {}, name).graph };
    const graph: IrGraph = options.frozenBatchNorm ? withFrozenBatchNorm(read) : read;
    const [input, ...otherInputs] = graph.inputs;
    if (!input || otherInputs.length > 0) throw new DmlError('E_MODEL', `${name} has ${graph.inputs.length} data inputs; the graph trainer trains networks with one image input`);
    if (input.type !== 'float32') throw new DmlError('E_MODEL', `${name}: input ${input.name} is ${input.type}; expected float32 images`);
    const output = graph.outputs[0];
    if (!output) throw new DmlError('E_MODEL', `${name} has no output`);
    const itemDims = options.itemDims;
    if (itemDims.length !== input.dims.length - 1 || itemDims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
      throw invalidParameterError('itemDims', `${input.dims.length - 1} positive integers (input ${input.name} is [${input.dims.join(', ')}])`, itemDims);
    }
    itemDims.forEach((d, i) => {
      const fixed = input.dims[i + 1];
      if (typeof fixed === 'number' && fixed !== d) throw invalidParameterError(`itemDims[${i}]`, `${fixed} (the model's fixed size)`, d);
    });
    if (options.microBatch !== undefined) {
      if (!Number.isSafeInteger(options.microBatch) || options.microBatch < 1) throw invalidParameterError('microBatch', 'a positive integer', options.microBatch);
      if (options.loss) throw invalidParameterError('microBatch', `none with a loss compiled into the step (${options.loss.name} would see one micro-batch, not the whole batch)`, options.microBatch);
    }
    const frozen = options.freezeUpTo !== undefined ? initializersUpTo(graph, options.freezeUpTo) : new Set<string>();
    const trained = (options.trained ?? defaultTrainedInitializers(graph)).filter((w) => !frozen.has(w));
    if (trained.length === 0) throw new DmlError('E_MODEL', `${name} has no weights to train${options.freezeUpTo !== undefined ? ` after ${options.freezeUpTo}` : ''}`);
    const learningRateScales = new Map<string, number>();
    for (const param of options.learningRateScale ? trained : []) {
      const scale = options.learningRateScale?.(param) ?? 1;
      if (!Number.isFinite(scale) || scale <= 0) throw invalidParameterError(`learningRateScale(${param})`, 'a positive number', scale);
      if (scale !== 1) learningRateScales.set(param, scale);
    }
    const decayedOf = options.decayed ?? ((_n: string, dims: readonly number[]) => dims.length > 1);
    const decayed = new Set(trained.filter((n) => decayedOf(n, graph.initializers.get(n)?.dims ?? [])));
    const optimizer = createGraphOptimizer(options.optimizer);
    const state = new TrainerState();
    for (const w of [...trained, ...runningStatistics(graph)]) {
      const initial = graph.initializers.get(w);
      state.setValues(w, Float32Array.from(initial?.data ?? []), initial?.dims ?? []);
    }
    const trainer = new GraphTrainer(graph, options, input.name, output.name, trained, decayed, learningRateScales, optimizer, state, source);
    const probeBatch = typeof input.dims[0] === 'number' ? input.dims[0] : 2;
    const probe = trainer.compile(probeBatch);
    for (const v of probe.io.variables) if (!state.has(v.input)) state.setValues(v.input, new Float32Array(elementCount(v.dims)), v.dims);
    if (options.loss) trainer.compileFused(probeBatch);
    return trainer;
  }

  /** The fused step (network and {@link GraphTrainerOptions.loss}) for `batch` items. */
  private compileFused(batch: number, nchwcBlock?: number): { compiled: ReturnType<typeof compileStep>; built: ReturnType<GraphLoss['build']> } {
    const loss = this.options.loss as GraphLoss;
    const built = loss.build(this.outputName, batch);
    const graph: IrGraph = {
      ...this.graph,
      nodes: [...this.graph.nodes, ...built.nodes],
      initializers: new Map([...this.graph.initializers, ...built.constants]),
      inputs: [...this.graph.inputs, ...[...built.inputs].map(([name, dims]) => ({ name, type: 'float32' as const, dims }))],
      outputs: [{ name: built.loss, type: 'float32', dims: [] }],
    };
    const inputDims = new Map<string, readonly number[]>([[this.inputName, [batch, ...this.options.itemDims]], ...built.inputs]);
    const compiled = compileStep({
      graph,
      inputDims,
      trained: this.trained,
      output: built.loss,
      decayed: this.decayed,
      optimizer: this.optimizer,
      gradientOutputs: this.options.recordGradients ?? false,
      fused: { outputs: [built.validCount] },
      learningRateScales: this.learningRateScales,
      ...(nchwcBlock !== undefined ? { nchwcBlock } : {}),
    });
    return { compiled, built };
  }

  /** The fused step for `batch` items, compiled and opened on first use. */
  private fusedFor(batch: number): Promise<FusedGraph> {
    let fused = this.fusedGraphs.get(batch);
    if (!fused) {
      fused = (async () => {
        const name = this.options.name ?? 'model';
        const { compiled: made, opened } = await this.compileAndOpen(
          (nchwcBlock) => this.compileFused(batch, nchwcBlock),
          ({ compiled }, device) =>
            createSession(compiled.fusedModel as Uint8Array, {
              device,
              name,
              optimization: STEP_GRAPH_OPTIMIZATION,
              ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}),
              ...this.deviceOutputs([...nextStateOutputs(compiled.io), ...compiled.io.forwardUpdates.map((u) => u.next)]),
            }),
        );
        const { compiled, built } = made;
        return { io: compiled.io, session: opened.session, loss: built.loss, validCount: built.validCount, dataInputs: built.inputs };
      })();
      this.fusedGraphs.set(batch, fused);
      fused.catch(() => this.fusedGraphs.delete(batch));
    }
    return fused;
  }

  /** Whether {@link trainStep} can run: a loss was compiled into the step. */
  get hasFusedStep(): boolean {
    return this.options.loss !== undefined;
  }

  /**
   * One optimiser step on `images` with `labels` at learning rate `lr`, the loss computed in the same
   * graph run as the forward, the backward and the update (needs {@link GraphTrainerOptions.loss}).
   * Applied only when the batch has a valid tuple and a finite loss; otherwise nothing changes.
   * `momentum`: this step's Adam β1 or SGD momentum when a schedule sets it (OneCycle's
   * `cycle_momentum`); default the optimiser's.
   */
  async trainStep(images: Float32Array, labels: Int32Array, lr: number, momentum?: number): Promise<FusedStepResult> {
    const loss = this.options.loss;
    if (!loss) throw new DmlError('E_ARG', 'trainStep needs the loss compiled into the step (GraphTrainer.create with `loss`)');
    const hyper = this.hyperValues(lr, momentum);
    const batch = this.batchOf(images);
    if (!(labels instanceof Int32Array) || labels.length !== batch) throw invalidParameterError('labels', `an Int32Array of ${batch} labels (one per image)`, labels instanceof Int32Array ? labels.length : labels);
    const fused = await this.fusedFor(batch);
    const io = fused.io;
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of fused.session.inputNames) {
      const tensor = this.state.tensor(name);
      if (tensor) feeds[name] = tensor;
    }
    feeds[this.inputName] = new ort.Tensor('float32', images, [batch, ...this.options.itemDims]);
    for (const [name, value] of loss.inputValues(labels)) feeds[name] = new ort.Tensor('float32', value, [...(fused.dataInputs.get(name) ?? [value.length])]);
    feeds[io.seed] = new ort.Tensor('float32', Float32Array.of(1), []);
    for (const [h, input] of Object.entries(io.hyper)) feeds[input] = new ort.Tensor('float32', Float32Array.of(hyper[h] as number), []);
    const out = await fused.session.run(feeds);
    const value = (out[fused.loss]?.data as Float32Array)[0] as number;
    const validCount = (out[fused.validCount]?.data as Float32Array)[0] as number;
    const applied = validCount > 0 && Number.isFinite(value);
    if (applied) {
      for (const v of io.variables) if (v.next && out[v.next]) this.state.set(v.input, out[v.next] as ort.Tensor);
      for (const u of io.forwardUpdates) this.state.set(u.input, out[u.next] as ort.Tensor);
      this.lastGradients.clear();
      for (const [p, g] of Object.entries(io.gradients)) this.lastGradients.set(p, out[g]?.data as Float32Array);
      this.steps += 1;
    }
    releaseUnkept(out, this.state);
    this.lastForward = undefined;
    return { value, validCount, applied };
  }

  /** The session option leaving `outputs` in device memory ({@link GraphTrainerOptions.stateResidency}). */
  private deviceOutputs(outputs: readonly string[]): { deviceOutputs?: readonly string[] } {
    return (this.options.stateResidency ?? 'device') === 'device' ? { deviceOutputs: outputs } : {};
  }

  /**
   * The NCHWc block to compile graphs for `device` with: onnxruntime's blocked convolutions on the CPU
   * provider (unless {@link GraphTrainerOptions.blockedConvolutions} is false), none on any other.
   */
  private async nchwcBlockFor(device: DeviceChoice): Promise<number | undefined> {
    return device === 'cpu' && this.options.blockedConvolutions !== false ? nchwcBlockSize() : undefined;
  }

  /**
   * Compiles graphs by `compile` for the provider that will run them and opens the first session by
   * `open`. While the provider is not known yet (`auto`, or a GPU that may fail), they are compiled
   * for any provider; when the session then lands on the CPU, they are compiled again for it (its
   * blocked convolutions) and that session opened instead.
   */
  private async compileAndOpen<C>(compile: (nchwcBlock: number | undefined) => C, open: (compiled: C, device: DeviceChoice) => Promise<CreatedSession>): Promise<{ compiled: C; opened: CreatedSession }> {
    const device = this.provider ?? this.options.device ?? 'cpu';
    let block = await this.nchwcBlockFor(device);
    let compiled = compile(block);
    let opened = await open(compiled, device);
    if (this.provider === undefined) {
      this.provider = opened.provider;
      this.attempts = opened.attempts;
    }
    if (device !== 'cpu' && opened.provider === 'cpu') {
      block = await this.nchwcBlockFor('cpu');
      if (block !== undefined) {
        await opened.session.release();
        compiled = compile(block);
        opened = await open(compiled, 'cpu');
      }
    }
    this.nchwcBlock = block;
    return { compiled, opened };
  }

  private compile(batch: number, accumulation = false, nchwcBlock?: number): ReturnType<typeof compileStep> {
    const inputDims = new Map([[this.inputName, [batch, ...this.options.itemDims]]]);
    return compileStep({
      ...(nchwcBlock !== undefined ? { nchwcBlock } : {}),
      accumulation,
      graph: this.graph,
      inputDims,
      trained: this.trained,
      output: this.outputName,
      decayed: this.decayed,
      optimizer: this.optimizer,
      gradientOutputs: this.options.recordGradients ?? false,
      learningRateScales: this.learningRateScales,
    });
  }

  /** The graphs for `batch` items, compiled and opened on first use. */
  private graphsFor(batch: number): Promise<BatchGraphs> {
    let graphs = this.graphs.get(batch);
    if (!graphs) {
      graphs = (async () => {
        const name = this.options.name ?? 'model';
        const sessionOptions = { name, optimization: STEP_GRAPH_OPTIMIZATION, ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}) } as const;
        const { compiled, opened: step } = await this.compileAndOpen(
          (nchwcBlock) => this.compile(batch, false, nchwcBlock),
          (made, device) => createSession(made.stepModel, { ...sessionOptions, device, ...this.deviceOutputs(nextStateOutputs(made.io)) }),
        );
        const io = compiled.io;
        // The embeddings come back for the loss; the kept activations and the running statistics stay for the step.
        const forward = await createSession(compiled.forwardModel, { ...sessionOptions, device: step.provider, ...this.deviceOutputs([...io.saved, ...io.forwardUpdates.map((u) => u.next)]) });
        return { io: compiled.io, step: step.session, forward: forward.session };
      })();
      this.graphs.set(batch, graphs);
      graphs.catch(() => this.graphs.delete(batch));
    }
    return graphs;
  }

  /** The graphs for micro-batches of `batch` items (and the update graph), compiled and opened on first use. */
  private microGraphsFor(batch: number): Promise<MicroBatchGraphs> {
    let graphs = this.microGraphs.get(batch);
    if (!graphs) {
      graphs = (async () => {
        const name = this.options.name ?? 'model';
        // Without onnxruntime's CPU arena: four sessions per size would each keep their peak (ResNet-50, batch 64
        // in micro-batches of 16: 5.6 GiB against 7.8, a step about 7% slower; docs/graph-trainer.md).
        const sessionOptions = { name, optimization: STEP_GRAPH_OPTIMIZATION, memoryArena: false, ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}) } as const;
        // What stays in device memory between runs: the kept activations (forward to backward), the running
        // statistics (one micro-batch to the next, then the state), the gradient sums, the update's state.
        const { compiled, opened: forward } = await this.compileAndOpen(
          (nchwcBlock) => this.compile(batch, true, nchwcBlock),
          (made, device) => createSession(made.forwardModel, { ...sessionOptions, device, ...this.deviceOutputs(made.io.saved) }),
        );
        const accumulation = compiled.accumulation as NonNullable<typeof compiled.accumulation>;
        const io = compiled.io;
        const onProvider = { ...sessionOptions, device: forward.provider };
        if (!this.updateGraph) {
          const update = createSession(accumulation.updateModel, { ...onProvider, ...this.deviceOutputs(io.variables.flatMap((v) => (v.next ? [v.next] : []))) }).then((opened) => opened.session);
          this.updateGraph = update;
          update.catch(() => (this.updateGraph = undefined));
        }
        const sums = this.deviceOutputs(Object.values(accumulation.gradients));
        const [embed, gradient, gradientSum] = await Promise.all([
          createSession(accumulation.embedModel, { ...onProvider, ...this.deviceOutputs(io.forwardUpdates.map((u) => u.next)) }),
          createSession(accumulation.gradientModel, { ...onProvider, ...sums }),
          createSession(accumulation.gradientSumModel, { ...onProvider, ...sums }),
          this.updateGraph,
        ]);
        return { io, embed: embed.session, forward: forward.session, gradient: gradient.session, gradientSum: gradientSum.session, gradients: accumulation.gradients, gradientSums: accumulation.gradientSums };
      })();
      this.microGraphs.set(batch, graphs);
      graphs.catch(() => this.microGraphs.delete(batch));
    }
    return graphs;
  }

  /** The micro-batches of a batch of `batch` items, as [first item, items]; one when it is not split. */
  private microBatchesOf(batch: number): Array<[number, number]> {
    const size = this.options.microBatch ?? batch;
    const parts: Array<[number, number]> = [];
    for (let start = 0; start < batch; start += size) parts.push([start, Math.min(size, batch - start)]);
    return parts;
  }

  /**
   * Compiles the graphs for batches of `batch` items and opens their sessions now (the fused step's
   * too, with a loss), so that a device that cannot run them fails here, before any work (they are
   * otherwise opened on first use).
   */
  async prepare(batch: number): Promise<void> {
    if (!Number.isSafeInteger(batch) || batch < 1) throw invalidParameterError('batch', 'a positive integer', batch);
    const parts = this.microBatchesOf(batch);
    if (parts.length > 1) {
      for (const size of new Set(parts.map(([, n]) => n))) await this.microGraphsFor(size);
      return;
    }
    await this.graphsFor(batch);
    if (this.options.loss) await this.fusedFor(batch);
  }

  /** Optimiser steps taken so far (restored by {@link restore}). */
  get stepCount(): number {
    return this.steps;
  }

  /** The dimensions of one input item (without the batch axis). */
  get itemDims(): readonly number[] {
    return this.options.itemDims;
  }

  private batchOf(images: Float32Array): number {
    const per = elementCount(this.options.itemDims);
    if (!(images instanceof Float32Array) || images.length === 0 || images.length % per !== 0) {
      throw invalidParameterError('images', `a Float32Array of a whole number of items of [${this.options.itemDims.join(', ')}] (${per} values each)`, images instanceof Float32Array ? images.length : images);
    }
    return images.length / per;
  }

  /** Feeds of `session` from the state (or `overrides`, by name): every input named like a state entry. */
  private stateFeeds(
    session: ort.InferenceSession,
    variables: readonly { readonly input: string; readonly dims: readonly number[] }[],
    overrides?: ReadonlyMap<string, Float32Array | ort.Tensor>,
  ): Record<string, ort.Tensor> {
    const inputs = new Set(session.inputNames);
    const feeds: Record<string, ort.Tensor> = {};
    for (const v of variables) {
      if (!inputs.has(v.input)) continue;
      const override = overrides?.get(v.input);
      feeds[v.input] = override instanceof Float32Array ? new ort.Tensor('float32', override, [...v.dims]) : (override ?? (this.state.tensor(v.input) as ort.Tensor));
    }
    return feeds;
  }

  /** Items `[start, start + count)` of `images`, as a tensor. */
  private itemsOf(images: Float32Array, start: number, count: number): ort.Tensor {
    const per = elementCount(this.options.itemDims);
    return new ort.Tensor('float32', images.slice(start * per, (start + count) * per), [count, ...this.options.itemDims]);
  }

  /**
   * The first pass of a batch in micro-batches: each micro-batch's embeddings (no activations kept),
   * the running statistics carried from one micro-batch to the next and kept for the step.
   */
  private async forwardInMicroBatches(images: Float32Array, parts: ReadonlyArray<[number, number]>): Promise<Float32Array> {
    // A first pass no step used: its running statistics are not needed any more.
    if (this.lastMicroForward) releaseUnkept(Object.fromEntries(this.lastMicroForward.runningStatistics), this.state);
    this.lastMicroForward = undefined;
    const running = new Map<string, ort.Tensor>();
    const embeddings: Float32Array[] = [];
    for (const [start, count] of parts) {
      const graphs = await this.microGraphsFor(count);
      const feeds = this.stateFeeds(graphs.embed, graphs.io.forwardVariables, running);
      feeds[this.inputName] = this.itemsOf(images, start, count);
      const out = await graphs.embed.run(feeds);
      embeddings.push(out[graphs.io.output]?.data as Float32Array);
      const before = Object.fromEntries(running);
      for (const u of graphs.io.forwardUpdates) running.set(u.input, out[u.next] as ort.Tensor);
      releaseUnkept(before, this.state);
    }
    const all = concatFloat32(embeddings);
    this.lastMicroForward = { images, atStep: this.steps, embeddings: all, runningStatistics: running };
    return all;
  }

  /**
   * The second pass and the update of a batch in micro-batches: each micro-batch's training forward
   * again and its backward from its rows of `outputGradient`, the gradients summed, then the
   * optimiser once; the running statistics of the first pass become the state. Returns the first
   * pass's embeddings.
   */
  private async stepInMicroBatches(images: Float32Array, outputGradient: Float32Array, hyper: Record<string, number>, parts: ReadonlyArray<[number, number]>): Promise<Float32Array> {
    const kept = this.lastMicroForward;
    if (!kept || kept.images !== images || kept.atStep !== this.steps) await this.forwardInMicroBatches(images, parts);
    const { embeddings, runningStatistics: running } = this.lastMicroForward as MicroBatchForward;
    if (!(outputGradient instanceof Float32Array) || outputGradient.length !== embeddings.length) {
      throw invalidParameterError('outputGradient', `a Float32Array of ${embeddings.length} values (the embeddings' size)`, outputGradient instanceof Float32Array ? outputGradient.length : outputGradient);
    }
    const dim = embeddings.length / this.batchOf(images);
    // Each trained parameter's gradient summed over the micro-batches so far, where the runs left it.
    let sums: Map<string, ort.Tensor> | undefined;
    let last: MicroBatchGraphs | undefined;
    for (const [start, count] of parts) {
      const graphs = await this.microGraphsFor(count);
      const io = graphs.io;
      const x = this.itemsOf(images, start, count);
      const forwardFeeds = this.stateFeeds(graphs.forward, io.forwardVariables);
      forwardFeeds[this.inputName] = x;
      const saved = await graphs.forward.run(forwardFeeds);
      const session = sums ? graphs.gradientSum : graphs.gradient;
      const feeds = this.stateFeeds(session, [...io.forwardVariables, ...io.variables]);
      for (const [param, input] of Object.entries(graphs.gradientSums)) if (sums) feeds[input] = sums.get(param) as ort.Tensor;
      for (const name of session.inputNames) {
        if (name === io.seed) feeds[name] = new ort.Tensor('float32', outputGradient.slice(start * dim, (start + count) * dim), [...io.outputDims]);
        else if (name === this.inputName) feeds[name] = x;
        else if (!feeds[name]) feeds[name] = saved[name] as ort.Tensor;
      }
      const out = await session.run(feeds);
      releaseUnkept(saved, this.state);
      if (sums) releaseUnkept(Object.fromEntries(sums), this.state);
      sums = new Map(Object.entries(graphs.gradients).map(([param, output]) => [param, out[output] as ort.Tensor]));
      last = graphs;
    }
    const { io, gradients } = last as MicroBatchGraphs;
    const summed = sums as Map<string, ort.Tensor>;
    const update = await (this.updateGraph as Promise<ort.InferenceSession>);
    const feeds = this.stateFeeds(update, io.variables);
    for (const [h, input] of Object.entries(io.hyper)) if (update.inputNames.includes(input)) feeds[input] = new ort.Tensor('float32', Float32Array.of(hyper[h] as number), []);
    for (const [param, input] of Object.entries(gradients)) feeds[input] = summed.get(param) as ort.Tensor;
    const out = await update.run(feeds);
    for (const v of io.variables) {
      const next = v.next ? (out[v.next] as ort.Tensor | undefined) : undefined;
      if (next) this.state.set(v.input, next);
    }
    for (const [name, value] of running) this.state.set(name, value);
    this.lastGradients.clear();
    if (this.options.recordGradients) for (const [param, sum] of summed) this.lastGradients.set(param, Float32Array.from((await sum.getData()) as Float32Array));
    releaseUnkept(Object.fromEntries(summed), this.state);
    this.steps += 1;
    this.lastMicroForward = undefined;
    return embeddings;
  }

  /** Runs the forward graph on `images` and keeps its outputs for the step that follows. */
  private async runForward(images: Float32Array): Promise<{ graphs: BatchGraphs; run: ForwardRun }> {
    const batch = this.batchOf(images);
    const graphs = await this.graphsFor(batch);
    const feeds = this.stateFeeds(graphs.forward, graphs.io.forwardVariables);
    feeds[this.inputName] = new ort.Tensor('float32', images, [batch, ...this.options.itemDims]);
    const run: ForwardRun = { images, atStep: this.steps, outputs: await graphs.forward.run(feeds) };
    // A forward no step used: its kept activations are not needed any more.
    if (this.lastForward) releaseUnkept(this.lastForward.outputs, this.state);
    this.lastForward = run;
    return { graphs, run };
  }

  /**
   * The embeddings of `images` (row-major, item after item) with batch statistics, weights unchanged.
   * The activations are kept: a {@link step} on the same `images` array reuses them (in micro-batches,
   * {@link GraphTrainerOptions.microBatch}: none are kept, the running statistics are).
   */
  async forward(images: Float32Array): Promise<Float32Array> {
    const parts = this.microBatchesOf(this.batchOf(images));
    if (parts.length > 1) return this.forwardInMicroBatches(images, parts);
    const { graphs, run } = await this.runForward(images);
    return run.outputs[graphs.io.output]?.data as Float32Array;
  }

  /**
   * One optimiser step at learning rate `lr`: `outputGradient` is d loss / d embeddings for the
   * embeddings {@link forward} gave for `images` (the same array, no step in between: its kept
   * activations are used; otherwise the forward runs again). Returns those embeddings. In
   * micro-batches, each micro-batch's forward runs again with its backward, the gradients are summed
   * and the optimiser steps once ({@link GraphTrainerOptions.microBatch}). `momentum`: this step's
   * Adam β1 or SGD momentum when a schedule sets it (OneCycle's `cycle_momentum`); default the optimiser's.
   */
  async step(images: Float32Array, outputGradient: Float32Array, lr: number, momentum?: number): Promise<Float32Array> {
    const hyper = this.hyperValues(lr, momentum);
    const parts = this.microBatchesOf(this.batchOf(images));
    if (parts.length > 1) {
      return this.stepInMicroBatches(images, outputGradient, hyper, parts);
    }
    const kept = this.lastForward;
    const { graphs, run } = kept && kept.images === images && kept.atStep === this.steps ? { graphs: await this.graphsFor(this.batchOf(images)), run: kept } : await this.runForward(images);
    const io = graphs.io;
    if (!(outputGradient instanceof Float32Array) || outputGradient.length !== elementCount(io.outputDims)) {
      throw invalidParameterError('outputGradient', `a Float32Array of ${elementCount(io.outputDims)} values ([${io.outputDims.join(', ')}])`, outputGradient instanceof Float32Array ? outputGradient.length : outputGradient);
    }
    const feeds = this.stateFeeds(graphs.step, io.variables);
    feeds[io.seed] = new ort.Tensor('float32', outputGradient, [...io.outputDims]);
    for (const name of io.saved) feeds[name] = run.outputs[name] as ort.Tensor;
    for (const name of io.stepData) feeds[name] = new ort.Tensor('float32', images, [this.batchOf(images), ...this.options.itemDims]);
    for (const [h, input] of Object.entries(io.hyper)) feeds[input] = new ort.Tensor('float32', Float32Array.of(hyper[h] as number), []);
    const out = await graphs.step.run(feeds);
    for (const v of io.variables) {
      if (!v.next) continue;
      const next = out[v.next] as ort.Tensor | undefined;
      if (!next) throw new DmlError('E_MODEL', `the step graph returned no ${v.next}`);
      this.state.set(v.input, next);
    }
    for (const u of io.forwardUpdates) this.state.set(u.input, run.outputs[u.next] as ort.Tensor);
    this.lastGradients.clear();
    for (const [p, g] of Object.entries(io.gradients)) this.lastGradients.set(p, out[g]?.data as Float32Array);
    this.steps += 1;
    // The kept activations are used up.
    releaseUnkept(run.outputs, this.state);
    releaseUnkept(out, this.state);
    this.lastForward = undefined;
    return run.outputs[io.output]?.data as Float32Array;
  }

  /** The optimiser's per-step scalars of the next step at `lr` and `momentum` (both checked). */
  private hyperValues(lr: number, momentum: number | undefined): Record<string, number> {
    if (!(lr >= 0) || !Number.isFinite(lr)) throw invalidParameterError('lr', 'a finite non-negative number', lr);
    if (momentum !== undefined && !(momentum >= 0 && momentum < 1)) throw invalidParameterError('momentum', 'a number in [0, 1)', momentum);
    return this.optimizer.hyperValues(this.steps + 1, lr, momentum);
  }

  /** The names of the trained initializers. */
  get trainedNames(): readonly string[] {
    return this.trained;
  }

  /** The optimiser's per-parameter slots (e.g. `exp_avg`, `exp_avg_sq`). */
  get slotNames(): readonly string[] {
    return this.optimizer.slots;
  }

  /**
   * Restores optimiser slots and the step count (a resume): `slots` maps `<param>:<slot>` names to
   * values of the parameter's size. Weights and running statistics come with the model.
   */
  restore(slots: ReadonlyMap<string, Float32Array>, stepCount: number): void {
    if (!Number.isSafeInteger(stepCount) || stepCount < 0) throw invalidParameterError('stepCount', 'a non-negative integer', stepCount);
    for (const param of this.trained) {
      for (const slot of this.optimizer.slots) {
        const name = slotName(param, slot);
        const value = slots.get(name);
        const dims = this.state.tensor(param)?.dims ?? [];
        const size = elementCount(dims);
        if (!value || value.length !== size) throw new DmlError('E_ARG', `optimizer slot ${name}: expected ${size} values, found ${value?.length ?? 'none'}`);
        this.state.setValues(name, value.slice(), dims);
      }
    }
    this.steps = stepCount;
  }

  /**
   * Reads the state back from device memory ({@link GraphTrainerOptions.stateResidency}), so that
   * {@link value}, {@link weights}, {@link slots} and {@link exportModel} can read it: call it after
   * steps and before those. Nothing to do on the CPU provider.
   */
  async synchronize(): Promise<void> {
    await this.state.synchronize();
  }

  /**
   * The current value of a trained weight, running statistic or optimiser slot (`<param>:<slot>`).
   * E_ARG for a value in device memory since the last step: {@link synchronize} first.
   */
  value(name: string): Float32Array | undefined {
    return this.state.value(name);
  }

  /** The gradient of trained parameter `name` in the last step (with `recordGradients`). */
  gradient(name: string): Float32Array | undefined {
    return this.lastGradients.get(name);
  }

  /** Every trained weight and running statistic by initializer name (not the optimiser slots); {@link synchronize} first after steps on a device. */
  weights(): Map<string, Float32Array> {
    return new Map(this.state.names().filter((name) => this.graph.initializers.has(name)).map((name) => [name, this.state.value(name) as Float32Array]));
  }

  /** The optimiser slots of trained parameter `param`, by slot name; {@link synchronize} first after steps on a device. */
  slots(param: string): Record<string, Float32Array | undefined> {
    return Object.fromEntries(this.optimizer.slots.map((s) => [s, this.state.value(slotName(param, s))]));
  }

  /**
   * The forward model (inference mode, as given) with the trained weights and running statistics.
   * Every tensor the trainer holds is an initializer under its own name: `Constant` nodes and the
   * aliases PyTorch's exporter writes for equal initializers (`Identity` nodes) are replaced by
   * initializers (lib/engine/graph/constant-initializers.ts), so no trained value is lost and no layer
   * reads another's. {@link synchronize} first after steps on a device.
   */
  exportModel(): Uint8Array {
    const model = this.source;
    const graph = model.graph ?? {};
    const initializers: TensorProto[] = (graph.initializer ?? []).map((t) => {
      const value = this.state.value(t.name ?? '');
      return value ? floatTensor(t.name ?? '', (t.dims ?? []).map((d) => int64Value(d) ?? 0), value) : t;
    });
    const opsetImports = (model.opsetImport ?? []).map((o) => ({ domain: o.domain ?? '', version: int64Value(o.version) ?? 0 }));
    return encodeModel({
      graphName: graph.name ?? 'dmlkit',
      inputs: graph.input ?? [],
      outputs: graph.output ?? [],
      nodes: graph.node ?? [],
      initializers,
      valueInfo: graph.valueInfo ?? [],
      metadata: Object.fromEntries((model.metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? ''])),
      opsetImports,
      irVersion: int64Value(model.irVersion) ?? 8,
    });
  }

  /** Closes every session and releases the state's device memory. */
  async release(): Promise<void> {
    if (this.lastForward) releaseUnkept(this.lastForward.outputs, this.state);
    this.lastForward = undefined;
    this.state.release();
    const micro = await Promise.allSettled([...this.microGraphs.values()]);
    this.microGraphs.clear();
    for (const r of micro) if (r.status === 'fulfilled') await Promise.all([r.value.embed.release(), r.value.forward.release(), r.value.gradient.release()]);
    const update = await this.updateGraph?.catch(() => undefined);
    this.updateGraph = undefined;
    await update?.release();
    const all = await Promise.allSettled([...this.graphs.values()]);
    this.graphs.clear();
    for (const r of all) if (r.status === 'fulfilled') await Promise.all([r.value.forward.release(), r.value.step.release()]);
    const fused = await Promise.allSettled([...this.fusedGraphs.values()]);
    this.fusedGraphs.clear();
    for (const r of fused) if (r.status === 'fulfilled') await r.value.session.release();
  }
}

/** The step graph's outputs holding the next values of the state it updates. */
function nextStateOutputs(io: StepGraphIo): string[] {
  return io.variables.flatMap((v) => (v.next ? [v.next] : []));
}

/** `graph` with every BatchNormalization marked frozen (see normalization.ts). */
function withFrozenBatchNorm(graph: IrGraph): IrGraph {
  return {
    ...graph,
    nodes: graph.nodes.map((node) =>
      node.opType === 'BatchNormalization' ? { ...node, attributes: new Map([...node.attributes, [FROZEN_BATCH_NORM_ATTRIBUTE, { i: 1 }]]) } : node,
    ),
  };
}
