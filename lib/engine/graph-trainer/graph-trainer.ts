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
 * const trainer = await GraphTrainer.create({ model: bytes, inputDims: [32, 3, 64, 64], optimizer: { kind: 'adam' } });
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
  /** The input's fixed dimensions, e.g. [batch, 3, 64, 64]. */
  readonly inputDims: readonly number[];
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

/** A network being trained by whole-step ONNX graphs. */
export class GraphTrainer {
  /** The provider running the step graph and each provider tried. */
  readonly provider: ExecutionProviderName;
  readonly attempts: readonly ProviderAttempt[];
  /** Optimiser steps taken. */
  private steps = 0;
  private readonly lastGradients = new Map<string, Float32Array>();

  private constructor(
    private readonly graph: IrGraph,
    private readonly bytes: Uint8Array,
    private readonly optimizer: GraphOptimizer,
    private readonly forwardGraph: RunnableGraph,
    private readonly stepGraph: RunnableGraph,
    private readonly state: Map<string, Float32Array>,
    /** The input's fixed dimensions. */
    readonly inputDims: readonly number[],
    /** The embeddings' dimensions. */
    readonly outputDims: readonly number[],
    created: { provider: ExecutionProviderName; attempts: readonly ProviderAttempt[] },
  ) {
    this.provider = created.provider;
    this.attempts = created.attempts;
  }

  /** Compiles the model's training graphs and opens their sessions. Throws E_MODEL naming what cannot be trained. */
  static async create(options: GraphTrainerOptions): Promise<GraphTrainer> {
    const name = options.name ?? 'model';
    const graph = readOnnxGraph(options.model, name);
    const [input, ...otherInputs] = graph.inputs;
    if (!input || otherInputs.length > 0) throw new DmlError('E_MODEL', `${name} has ${graph.inputs.length} data inputs; the graph trainer trains networks with one image input`);
    if (input.type !== 'float32') throw new DmlError('E_MODEL', `${name}: input ${input.name} is ${input.type}; expected float32 images`);
    const output = graph.outputs[0];
    if (!output) throw new DmlError('E_MODEL', `${name} has no output`);
    if (options.inputDims.length !== input.dims.length || options.inputDims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
      throw invalidParameterError('inputDims', `${input.dims.length} positive integers (input ${input.name} is [${input.dims.join(', ')}])`, options.inputDims);
    }
    input.dims.forEach((d, i) => {
      if (typeof d === 'number' && d !== options.inputDims[i]) throw invalidParameterError(`inputDims[${i}]`, `${d} (the model's fixed size)`, options.inputDims[i]);
    });
    const trained = options.trained ?? defaultTrainedInitializers(graph);
    if (trained.length === 0) throw new DmlError('E_MODEL', `${name} has no weights to train`);
    const decayedOf = options.decayed ?? ((_n: string, dims: readonly number[]) => dims.length > 1);
    const decayed = new Set(trained.filter((n) => decayedOf(n, graph.initializers.get(n)?.dims ?? [])));
    const optimizer = createGraphOptimizer(options.optimizer);
    const inputDims = new Map([[input.name, options.inputDims]]);
    const step = compileStep({ graph, inputDims, trained, decayed, output: output.name, optimizer, gradientOutputs: options.recordGradients ?? false });
    const forward = compileTrainingForward({ graph, inputDims, trained, output: output.name });
    const sessionOptions = { device: options.device ?? 'cpu', name, ...(options.threads !== undefined ? { threads: options.threads } : {}) } as const;
    const stepSession = await createSession(step.model, sessionOptions);
    const forwardSession = await createSession(forward.model, { ...sessionOptions, device: stepSession.provider });
    const state = new Map<string, Float32Array>();
    for (const name of [...trained, ...runningStatistics(graph)]) state.set(name, Float32Array.from(graph.initializers.get(name)?.data ?? []));
    for (const v of step.io.variables) if (!state.has(v.input)) state.set(v.input, new Float32Array(elementCount(v.dims)));
    return new GraphTrainer(graph, options.model, optimizer, { compiled: forward, session: forwardSession.session }, { compiled: step, session: stepSession.session }, state, [...options.inputDims], step.io.outputDims, stepSession);
  }

  /** Optimiser steps taken so far. */
  get stepCount(): number {
    return this.steps;
  }

  private feeds(compiled: CompiledGraph, images: Float32Array): Record<string, ort.Tensor> {
    const feeds: Record<string, ort.Tensor> = {};
    const data = compiled.io.data[0] as string;
    feeds[data] = new ort.Tensor('float32', images, [...this.inputDims]);
    for (const v of compiled.io.variables) feeds[v.input] = new ort.Tensor('float32', this.state.get(v.input) as Float32Array, v.dims);
    return feeds;
  }

  /** The embeddings of `images` (row-major, the input's dimensions) with batch statistics, weights unchanged. */
  async forward(images: Float32Array): Promise<Float32Array> {
    this.checkImages(images);
    const out = await this.forwardGraph.session.run(this.feeds(this.forwardGraph.compiled, images));
    return out[this.forwardGraph.compiled.io.output]?.data as Float32Array;
  }

  /**
   * One optimiser step at learning rate `lr`: `outputGradient` is d loss / d embeddings for the
   * embeddings {@link forward} gave for `images`. Returns the embeddings the step recomputed.
   */
  async step(images: Float32Array, outputGradient: Float32Array, lr: number): Promise<Float32Array> {
    this.checkImages(images);
    if (!(lr >= 0) || !Number.isFinite(lr)) throw invalidParameterError('lr', 'a finite non-negative number', lr);
    const io = this.stepGraph.compiled.io;
    const feeds = this.feeds(this.stepGraph.compiled, images);
    const outputDims = this.outputDims;
    if (outputGradient.length !== elementCount(outputDims)) throw invalidParameterError('outputGradient', `${elementCount(outputDims)} values ([${outputDims.join(', ')}])`, outputGradient.length);
    feeds[io.seed] = new ort.Tensor('float32', outputGradient, [...outputDims]);
    const hyper = this.optimizer.hyperValues(this.steps + 1, lr);
    for (const [h, input] of Object.entries(io.hyper)) feeds[input] = new ort.Tensor('float32', Float32Array.of(hyper[h] as number), []);
    const out = await this.stepGraph.session.run(feeds);
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

  private checkImages(images: Float32Array): void {
    const expected = elementCount(this.inputDims);
    if (!(images instanceof Float32Array) || images.length !== expected) {
      throw invalidParameterError('images', `a Float32Array of ${expected} values ([${this.inputDims.join(', ')}])`, images instanceof Float32Array ? images.length : images);
    }
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
    const model = decodeModel(this.bytes, 'model');
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

  /** Closes both sessions. */
  async release(): Promise<void> {
    await this.forwardGraph.session.release();
    await this.stepGraph.session.release();
  }
}
