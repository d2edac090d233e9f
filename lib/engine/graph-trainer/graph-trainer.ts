/**
 * @file The graph trainer: trains the weights of an ONNX forward graph with onnxruntime, one graph
 * run per step (lib/engine/graph-trainer/step-graph.ts), on any execution provider onnxruntime-node
 * offers (`device` as `dml eval` chooses it).
 *
 * A step is two runs: the training forward gives the embeddings; the caller computes the loss and its
 * gradient with respect to the embeddings (dmlkit's losses, unchanged); the step graph recomputes the
 * forward, back-propagates that gradient and applies the optimiser. The weights, optimiser slots and
 * running statistics live in JavaScript between steps (onnxruntime-node cannot keep tensors on a device
 * between runs) and go in and out of each run.
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
import { decodeModel, encodeModel, floatTensor, int64Value, type TensorProto } from '../../onnx/builder.js';
import type { DeviceChoice, ExecutionProviderName } from '../../onnx/devices.js';
import ort from '../../onnx/ort.js';
import { createSession, type ProviderAttempt } from '../../onnx/session.js';
import { elementCount, readOnnxGraph, type IrGraph } from '../graph/onnx-ir.js';
import { createGraphOptimizer, type GraphOptimizer, type GraphOptimizerSettings } from './optimizer-graph.js';
import { compileStep, compileTrainingForward, defaultTrainedInitializers, runningStatistics, slotName, type CompiledGraph } from './step-graph.js';

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
  /** Which trained parameters take weight decay; default: those of rank 2 or more (kernels, not biases or normalisation parameters). */
  readonly decayed?: (name: string, dims: readonly number[]) => boolean;
  /** Execution provider; default `cpu`. */
  readonly device?: DeviceChoice;
  /** Intra-op threads; onnxruntime's default when omitted. */
  readonly threads?: number;
  /** Keep each step's parameter gradients ({@link GraphTrainer.gradient}); default false. */
  readonly recordGradients?: boolean;
}

interface RunnableGraph {
  readonly compiled: CompiledGraph;
  readonly session: ort.InferenceSession;
}

/** The two graphs of one batch size. */
interface BatchGraphs {
  readonly forward: RunnableGraph;
  readonly step: RunnableGraph;
}

/** A network being trained by whole-step ONNX graphs. */
export class GraphTrainer {
  /** The provider running the step graphs (the first batch size's choice, kept for the others). */
  provider: ExecutionProviderName | undefined;
  /** Each provider tried when the first graph was opened. */
  attempts: readonly ProviderAttempt[] = [];
  /** Optimiser steps taken. */
  private steps = 0;
  private readonly lastGradients = new Map<string, Float32Array>();
  private readonly graphs = new Map<number, Promise<BatchGraphs>>();

  private constructor(
    private readonly graph: IrGraph,
    private readonly options: GraphTrainerOptions,
    private readonly inputName: string,
    private readonly outputName: string,
    private readonly trained: readonly string[],
    private readonly decayed: ReadonlySet<string>,
    private readonly optimizer: GraphOptimizer,
    private readonly state: Map<string, Float32Array>,
  ) {}

  /**
   * Reads the model and checks what it can before any graph is compiled: one float32 input whose
   * item dimensions match `itemDims`, an output, weights to train, the optimiser settings, and a
   * gradient rule for every operator between the weights and the output (compiled at batch size 2).
   */
  static async create(options: GraphTrainerOptions): Promise<GraphTrainer> {
    const name = options.name ?? 'model';
    const graph = readOnnxGraph(options.model, name);
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
    const trained = options.trained ?? defaultTrainedInitializers(graph);
    if (trained.length === 0) throw new DmlError('E_MODEL', `${name} has no weights to train`);
    const decayedOf = options.decayed ?? ((_n: string, dims: readonly number[]) => dims.length > 1);
    const decayed = new Set(trained.filter((n) => decayedOf(n, graph.initializers.get(n)?.dims ?? [])));
    const optimizer = createGraphOptimizer(options.optimizer);
    const state = new Map<string, Float32Array>();
    for (const w of [...trained, ...runningStatistics(graph)]) state.set(w, Float32Array.from(graph.initializers.get(w)?.data ?? []));
    const trainer = new GraphTrainer(graph, options, input.name, output.name, trained, decayed, optimizer, state);
    const probe = trainer.compile(typeof input.dims[0] === 'number' ? input.dims[0] : 2);
    for (const v of probe.step.io.variables) if (!state.has(v.input)) state.set(v.input, new Float32Array(elementCount(v.dims)));
    return trainer;
  }

  private compile(batch: number): { forward: CompiledGraph; step: CompiledGraph } {
    const inputDims = new Map([[this.inputName, [batch, ...this.options.itemDims]]]);
    const common = { graph: this.graph, inputDims, trained: this.trained, output: this.outputName };
    return {
      step: compileStep({ ...common, decayed: this.decayed, optimizer: this.optimizer, gradientOutputs: this.options.recordGradients ?? false }),
      forward: compileTrainingForward(common),
    };
  }

  /** The graphs for `batch` items, compiled and opened on first use. */
  private graphsFor(batch: number): Promise<BatchGraphs> {
    let graphs = this.graphs.get(batch);
    if (!graphs) {
      graphs = (async () => {
        const compiled = this.compile(batch);
        const name = this.options.name ?? 'model';
        const device = this.provider ?? this.options.device ?? 'cpu';
        const sessionOptions = { device, name, ...(this.options.threads !== undefined ? { threads: this.options.threads } : {}) } as const;
        const step = await createSession(compiled.step.model, sessionOptions);
        if (this.provider === undefined) {
          this.provider = step.provider;
          this.attempts = step.attempts;
        }
        const forward = await createSession(compiled.forward.model, { ...sessionOptions, device: step.provider });
        return { step: { compiled: compiled.step, session: step.session }, forward: { compiled: compiled.forward, session: forward.session } };
      })();
      this.graphs.set(batch, graphs);
      graphs.catch(() => this.graphs.delete(batch));
    }
    return graphs;
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

  private feeds(compiled: CompiledGraph, images: Float32Array, batch: number): Record<string, ort.Tensor> {
    const feeds: Record<string, ort.Tensor> = { [this.inputName]: new ort.Tensor('float32', images, [batch, ...this.options.itemDims]) };
    for (const v of compiled.io.variables) feeds[v.input] = new ort.Tensor('float32', this.state.get(v.input) as Float32Array, [...v.dims]);
    return feeds;
  }

  /** The embeddings of `images` (row-major, item after item) with batch statistics, weights unchanged. */
  async forward(images: Float32Array): Promise<Float32Array> {
    const batch = this.batchOf(images);
    const { forward } = await this.graphsFor(batch);
    const out = await forward.session.run(this.feeds(forward.compiled, images, batch));
    return out[forward.compiled.io.output]?.data as Float32Array;
  }

  /**
   * One optimiser step at learning rate `lr`: `outputGradient` is d loss / d embeddings for the
   * embeddings {@link forward} gave for `images`. Returns the embeddings the step recomputed.
   */
  async step(images: Float32Array, outputGradient: Float32Array, lr: number): Promise<Float32Array> {
    const batch = this.batchOf(images);
    if (!(lr >= 0) || !Number.isFinite(lr)) throw invalidParameterError('lr', 'a finite non-negative number', lr);
    const { step } = await this.graphsFor(batch);
    const io = step.compiled.io;
    if (!(outputGradient instanceof Float32Array) || outputGradient.length !== elementCount(io.outputDims)) {
      throw invalidParameterError('outputGradient', `a Float32Array of ${elementCount(io.outputDims)} values ([${io.outputDims.join(', ')}])`, outputGradient instanceof Float32Array ? outputGradient.length : outputGradient);
    }
    const feeds = this.feeds(step.compiled, images, batch);
    feeds[io.seed] = new ort.Tensor('float32', outputGradient, [...io.outputDims]);
    const hyper = this.optimizer.hyperValues(this.steps + 1, lr);
    for (const [h, input] of Object.entries(io.hyper)) feeds[input] = new ort.Tensor('float32', Float32Array.of(hyper[h] as number), []);
    const out = await step.session.run(feeds);
    for (const v of io.variables) {
      if (!v.next) continue;
      const next = out[v.next]?.data as Float32Array | undefined;
      if (!next) throw new DmlError('E_MODEL', `the step graph returned no ${v.next}`);
      this.state.set(v.input, next);
    }
    this.lastGradients.clear();
    for (const [p, g] of Object.entries(io.gradients)) this.lastGradients.set(p, out[g]?.data as Float32Array);
    this.steps += 1;
    return out[io.output]?.data as Float32Array;
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
        const size = this.state.get(param)?.length ?? 0;
        if (!value || value.length !== size) throw new DmlError('E_ARG', `optimizer slot ${name}: expected ${size} values, found ${value?.length ?? 'none'}`);
        this.state.set(name, value.slice());
      }
    }
    this.steps = stepCount;
  }

  /** The current value of a trained weight, running statistic or optimiser slot (`<param>:<slot>`). */
  value(name: string): Float32Array | undefined {
    return this.state.get(name);
  }

  /** The gradient of trained parameter `name` in the last step (with `recordGradients`). */
  gradient(name: string): Float32Array | undefined {
    return this.lastGradients.get(name);
  }

  /** Every trained weight and running statistic by initializer name (not the optimiser slots). */
  weights(): Map<string, Float32Array> {
    return new Map([...this.state].filter(([name]) => this.graph.initializers.has(name)));
  }

  /** The optimiser slots of trained parameter `param`, by slot name. */
  slots(param: string): Record<string, Float32Array | undefined> {
    return Object.fromEntries(this.optimizer.slots.map((s) => [s, this.state.get(slotName(param, s))]));
  }

  /** The forward model (inference mode, as given) with the trained weights and running statistics. */
  exportModel(): Uint8Array {
    const model = decodeModel(this.options.model, 'model');
    const graph = model.graph ?? {};
    const initializers: TensorProto[] = (graph.initializer ?? []).map((t) => {
      const value = this.state.get(t.name ?? '');
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

  /** Closes every session. */
  async release(): Promise<void> {
    const all = await Promise.allSettled([...this.graphs.values()]);
    this.graphs.clear();
    for (const r of all) if (r.status === 'fulfilled') await Promise.all([r.value.forward.session.release(), r.value.step.session.release()]);
  }
}
