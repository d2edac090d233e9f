/**
 * @file Compiles a forward ONNX graph into the two graphs one training step runs:
 *
 * - the **training forward**: the network in training mode (batch statistics), giving the embeddings
 *   the loss is computed on and the activations the backward reads (`io.saved`);
 * - the **step**: the backward from the embeddings' gradient (the loss's gradient, computed outside)
 *   and the optimiser's update, in one graph run. Its inputs are those saved activations, the images
 *   where the backward reads them, the embeddings' gradient, the trained weights and optimiser slots
 *   it reads, and the per-step scalars; its outputs their new values (`<name>:next`). Running the
 *   forward again inside the step instead of carrying the activations costs as much on the CPU
 *   (docs/graph-trainer.md, "Speed").
 *
 * Both are compiled for one fixed input size: every shape is static, and PyTorch's shape arithmetic
 * is folded away (lib/engine/graph/shapes.ts).
 *
 * When the graph's output is the loss itself (a scalar: the network with a loss written as ONNX after
 * it, lib/train/graph-loss.ts), `fused` also gives the **fused step**: forward, backward and update
 * as one graph, so that a step is one run and no activation leaves onnxruntime.
 */
import { DmlError, invalidParameterError } from '../../errors.js';
import { NCHWC_DOMAIN, NCHWC_OPSET_IMPORTS } from '../../onnx/nchwc.js';
import { boolTensor, encodeModel, floatTensor, int64Tensor, node as protoNode, tensorValueInfo, type NodeProto, type ValueInfoProto } from '../../onnx/builder.js';
import { checkDifferentiable, emitBackward, emitTrainingForward } from '../autodiff/differentiate.js';
import { StepEmitter } from '../autodiff/emitter.js';
import type { StateUpdate } from '../autodiff/rule.js';
import { elementCount, intAttribute, type IrGraph, type IrNode, type IrTensor } from '../graph/onnx-ir.js';
import { FROZEN_BATCH_NORM_ATTRIBUTE } from '../autodiff/rules/normalization.js';
import { inferShapes, type ShapedGraph } from '../graph/shapes.js';
import type { GraphOptimizer } from './optimizer-graph.js';

/** The value names of a compiled step. */
export interface StepGraphIo {
  /** Graph inputs fed with data each step (the images), inputs of the forward graph. */
  readonly data: readonly string[];
  /** The forward graph's output the loss is computed on. */
  readonly output: string;
  /** Its dimensions. */
  readonly outputDims: readonly number[];
  /** The state the forward graph reads (weights, running statistics). */
  readonly forwardVariables: readonly { readonly input: string; readonly dims: readonly number[] }[];
  /** State the forward graph computes the next value of (BatchNorm running statistics): applied when the step is taken. */
  readonly forwardUpdates: readonly { readonly input: string; readonly next: string }[];
  /** Forward values the step graph reads: further outputs of the forward graph, inputs of the step graph, same names. */
  readonly saved: readonly string[];
  /** The data inputs the step graph reads too (a first layer's weight gradient needs the images). */
  readonly stepData: readonly string[];
  /** The step graph's input holding d loss / d output. */
  readonly seed: string;
  /**
   * The state the step graph reads (weights, optimiser slots), each with the output holding its next
   * value; `next` is absent for state it reads but does not change. Running statistics are updated
   * by the forward and leave through the step graph too.
   */
  readonly variables: readonly { readonly input: string; readonly next?: string; readonly dims: readonly number[] }[];
  /** Per-step scalar inputs of the step graph by hyperparameter name. */
  readonly hyper: Readonly<Record<string, string>>;
  /** With `gradientOutputs`: the step graph's output holding each trained parameter's gradient (`<name>:grad`). */
  readonly gradients: Readonly<Record<string, string>>;
}

/** A compiled training step: two graphs run one after the other, the loss's gradient computed between them. */
export interface CompiledStep {
  /** The training forward: images and state in; the output and the saved activations out. */
  readonly forwardModel: Uint8Array;
  /** The backward and the update: the saved activations, the output's gradient, state and per-step scalars in; the next state out. */
  readonly stepModel: Uint8Array;
  /**
   * With `fused`: forward, backward and update in one graph. Inputs: the data, the state both graphs
   * read, the per-step scalars and the seed; outputs: the output, the `fused.outputs`, the next state
   * (running statistics too) and, with `gradientOutputs`, the gradients.
   */
  readonly fusedModel?: Uint8Array;
  /** With `accumulation`. */
  readonly accumulation?: AccumulationGraphs;
  readonly io: StepGraphIo;
}

/** What to compile. */
export interface StepGraphSpec {
  readonly graph: IrGraph;
  /** The fixed dimensions of each data input. */
  readonly inputDims: ReadonlyMap<string, readonly number[]>;
  /** The initializers to train. */
  readonly trained: readonly string[];
  /** The trained parameters that take weight decay. */
  readonly decayed: ReadonlySet<string>;
  /** The forward output the loss reads (the embeddings). */
  readonly output: string;
  readonly optimizer: GraphOptimizer;
  /** Also output each parameter's gradient (for gradient norms and checks). */
  readonly gradientOutputs?: boolean;
  /** Trained parameters whose learning rate is this factor times the step's (default 1 for the others). */
  readonly learningRateScales?: ReadonlyMap<string, number>;
  /** Also compile the fused step, which outputs `output` (the loss) and these forward values too. */
  readonly fused?: { readonly outputs: readonly string[] };
  /** Also compile the three graphs of gradient accumulation ({@link AccumulationGraphs}). */
  readonly accumulation?: boolean;
  /**
   * The channel block of onnxruntime's blocked CPU convolutions (`nchwcBlockSize`, lib/onnx/nchwc.ts): convolutions
   * are compiled into that layout where they fit (lib/engine/autodiff/rules/blocked-convolution.ts), and
   * the graphs then run on the CPU provider only. Default: ONNX's Conv, for any provider.
   */
  readonly nchwcBlock?: number;
}

/**
 * The graphs of a step whose batch runs in micro-batches (gradient accumulation), the loss computed
 * on the whole batch between the passes: the embedding forward of each micro-batch (the output and
 * the running statistics' next values, no activations kept); then per micro-batch the training forward
 * again ({@link CompiledStep.forwardModel}) and the gradient graph; then, once, the update graph on
 * the summed gradients.
 */
export interface AccumulationGraphs {
  /** The training forward with no saved activations: the data and the forward state in; the output and the running statistics' next values out. */
  readonly embedModel: Uint8Array;
  /** The backward alone: the saved activations, the data, the seed and the state it reads in; each trained parameter's gradient (`<param>:grad`) out. */
  readonly gradientModel: Uint8Array;
  /**
   * The backward of a later micro-batch: as {@link gradientModel}, with the sum of the earlier
   * micro-batches' gradients in (`<param>:grad_sum`) and that sum plus its own gradient out
   * (`<param>:grad`), so that the sum stays where the runs put it (device memory on WebGPU). Float32
   * additions in the order JavaScript made them: the same numbers.
   */
  readonly gradientSumModel: Uint8Array;
  /** The gradient-sum graph's input of each trained parameter. */
  readonly gradientSums: Readonly<Record<string, string>>;
  /** The optimiser alone: each trained parameter, its slots, its gradient (`<param>:grad`) and the per-step scalars in; their next values out. Independent of the batch size. */
  readonly updateModel: Uint8Array;
  /** The gradient graph's outputs, which are the update graph's inputs, by trained parameter. */
  readonly gradients: Readonly<Record<string, string>>;
}

/** The name of a parameter's optimiser slot in the step graph. */
export function slotName(param: string, slot: string): string {
  return `${param}:${slot}`;
}

/** The name of a value's next state in the step graph. */
export function nextName(name: string): string {
  return `${name}:next`;
}

/**
 * The initializers that `value` is computed from: those of every node on a path from the graph's
 * inputs to `value` (a node output). Freezing a network up to `value` leaves these untrained. Errors:
 * E_ARG when no node outputs `value`.
 */
export function initializersUpTo(graph: IrGraph, value: string): Set<string> {
  const producers = new Map<string, IrNode>();
  for (const n of graph.nodes) for (const o of n.outputs) producers.set(o, n);
  if (!producers.has(value)) throw invalidParameterError('freezeUpTo', 'the output of a node of the network', value);
  const found = new Set<string>();
  const seen = new Set<string>();
  const pending = [value];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    if (graph.initializers.has(name)) found.add(name);
    for (const input of producers.get(name)?.inputs ?? []) if (input) pending.push(input);
  }
  return found;
}

/**
 * The initializers a network trains by default: the weights of parametric operators (Conv and
 * ConvTranspose weight and bias, Gemm's B and C, MatMul's constant operand, BatchNormalization's scale
 * and bias, LayerNormalization's scale and bias, PRelu's slope), a weight transposed into a MatMul or
 * Gemm (a Linear layer as PyTorch exports it in a transformer), a constant added to a MatMul or Conv
 * result (the bias of a Linear exported as MatMul + Add), and, as PyTorch's parameters of a
 * transformer, a tensor (more than one value) added to or multiplied with a computed value (position
 * embeddings, a LayerNorm's scale and bias written out, layer scales) or broadcast by Expand (class
 * tokens). Other constants (scalars such as epsilons and GELU's, shapes) and running statistics are
 * not trained.
 */
export function defaultTrainedInitializers(graph: IrGraph): string[] {
  const producers = new Map<string, string>();
  for (const n of graph.nodes) for (const o of n.outputs) producers.set(o, n.opType);
  const consumers = new Map<string, string[]>();
  for (const n of graph.nodes) for (const i of n.inputs) consumers.set(i, [...(consumers.get(i) ?? []), n.opType]);
  const slots: Readonly<Record<string, readonly number[]>> = {
    Conv: [1, 2], ConvTranspose: [1, 2], Gemm: [0, 1, 2], MatMul: [0, 1], BatchNormalization: [1, 2], LayerNormalization: [1, 2], PRelu: [1],
  };
  const trained = new Set<string>();
  const isWeight = (name: string | undefined): name is string => !!name && graph.initializers.get(name)?.type === 'float32';
  const isTensor = (name: string): boolean => isWeight(name) && elementCount(graph.initializers.get(name)?.dims ?? []) > 1;
  const computed = (name: string): boolean => (!graph.initializers.has(name) && producers.has(name)) || graph.inputs.some((i) => i.name === name);
  for (const n of graph.nodes) {
    for (const i of slots[n.opType] ?? []) if (isWeight(n.inputs[i])) trained.add(n.inputs[i] as string);
    const [a, b] = n.inputs as [string | undefined, string | undefined];
    if (n.opType === 'Add' && a && b) {
      if (isWeight(b) && ['MatMul', 'Conv'].includes(producers.get(a) ?? '')) trained.add(b);
      if (isWeight(a) && ['MatMul', 'Conv'].includes(producers.get(b) ?? '')) trained.add(a);
    }
    if ((n.opType === 'Add' || n.opType === 'Mul') && a && b) {
      if (isTensor(b) && computed(a)) trained.add(b);
      if (isTensor(a) && computed(b)) trained.add(a);
    }
    if (n.opType === 'Expand' && a && isTensor(a)) trained.add(a);
    if (n.opType === 'Transpose' && a && isWeight(a) && (consumers.get(n.outputs[0] ?? '') ?? []).some((op) => op === 'MatMul' || op === 'Gemm')) trained.add(a);
  }
  return [...trained];
}

/** The running statistics (BatchNormalization inputs 3 and 4) a training step updates: those of every BatchNormalization not frozen. */
export function runningStatistics(graph: IrGraph): string[] {
  return graph.nodes
    .filter((n) => n.opType === 'BatchNormalization' && intAttribute(n, FROZEN_BATCH_NORM_ATTRIBUTE, 0) !== 1)
    .flatMap((n) => [n.inputs[3], n.inputs[4]].filter((x): x is string => !!x && graph.initializers.has(x)));
}

function valueInfo(name: string, type: 'float32' | 'int64', dims: readonly number[]): ValueInfoProto {
  return tensorValueInfo(name, type, dims);
}

/** A graph value declared by element type alone (a saved activation: onnxruntime reads its shape from the tensor). */
function untypedShape(name: string, type: 'float32' | 'int64'): ValueInfoProto {
  return { name, type: { tensorType: { elemType: type === 'float32' ? 1 : 7 } } };
}

function initializerOf(name: string, t: IrTensor): ReturnType<typeof floatTensor> {
  if (t.type === 'float32') return floatTensor(name, t.dims, t.data as Float32Array);
  if (t.type === 'int64') return int64Tensor(name, t.dims, Array.from(t.data));
  if (t.type === 'bool') return boolTensor(name, t.dims, t.data);
  throw new DmlError('E_MODEL', `constant ${name} is a ${t.type} tensor; the graph trainer writes float32, int64 and bool constants`);
}

function shaped(spec: StepGraphSpec): { shaped: ShapedGraph; variables: Set<string> } {
  const { graph, trained } = spec;
  for (const name of trained) {
    if (graph.initializers.get(name)?.type !== 'float32') throw invalidParameterError('trained', 'float32 initializers of the graph', name);
  }
  const variables = new Set([...trained, ...runningStatistics(graph)]);
  return { shaped: inferShapes(graph, spec.inputDims, variables), variables };
}

function emitConstants(emit: StepEmitter, s: ShapedGraph, variables: ReadonlySet<string>): void {
  const used = new Set(s.nodes.flatMap((n) => n.inputs));
  for (const name of used) {
    const t = s.constants.get(name);
    if (t && !variables.has(name)) emit.initializers.push(initializerOf(name, t));
  }
}

/** `nodes` with every value named in `names` renamed (outputs and inputs alike), in place; returns them. */
function renameValues(nodes: NodeProto[], names: ReadonlyMap<string, string>): NodeProto[] {
  const rename = (list: string[] | null | undefined): string[] => (list ?? []).map((v) => names.get(v) ?? v);
  for (const n of nodes) {
    n.input = rename(n.input);
    n.output = rename(n.output);
  }
  return nodes;
}

/** A model of `nodes` with the initializers of `emit` they read. */
function modelOf(emit: StepEmitter, name: string, inputs: ValueInfoProto[], outputs: ValueInfoProto[], nodes: NodeProto[]): Uint8Array {
  const read = new Set(nodes.flatMap((n) => n.input ?? []));
  const blocked = nodes.some((n) => n.domain === NCHWC_DOMAIN);
  return encodeModel({
    graphName: name,
    inputs,
    outputs,
    nodes,
    initializers: emit.initializers.filter((t) => read.has(t.name ?? '')),
    ...(blocked ? { opsetImports: NCHWC_OPSET_IMPORTS } : {}),
  });
}

/**
 * Compiles a training step (see the file comment): the forward graph, and the step graph of the
 * backward and the update. Throws E_MODEL naming an operator without a gradient rule.
 */
export function compileStep(spec: StepGraphSpec): CompiledStep {
  const { shaped: s, variables } = shaped(spec);
  const trained = new Set(spec.trained);
  const requiresGrad = checkDifferentiable(s, trained);
  if (!requiresGrad.has(spec.output)) throw new DmlError('E_MODEL', `output ${spec.output} does not depend on any trained weight`);
  if (spec.nchwcBlock !== undefined && (!Number.isSafeInteger(spec.nchwcBlock) || spec.nchwcBlock < 8 || spec.nchwcBlock % 4 !== 0)) {
    throw invalidParameterError('nchwcBlock', 'a multiple of 4, at least 8 (onnxruntime\'s NCHWc block size)', spec.nchwcBlock);
  }
  const emit = new StepEmitter(s.shapes, s.constants, spec.nchwcBlock);
  emitConstants(emit, s, variables);
  const seed = emit.unique(`${spec.output}:grad`);
  const hyper: Record<string, string> = {};
  for (const h of spec.optimizer.hyperParameters) hyper[h] = emit.unique(`optimizer:${h}`);
  const slotInputs = new Map<string, Record<string, string>>();
  for (const p of spec.trained) slotInputs.set(p, Object.fromEntries(spec.optimizer.slots.map((slot) => [slot, emit.unique(slotName(p, slot))])));

  const forward = emitTrainingForward(emit, s);
  const forwardNodes = emit.nodes.splice(0);
  const gradients = emitBackward(emit, s, forward, requiresGrad, spec.output, seed, spec.trained);
  const backwardNodeCount = emit.nodes.length;

  const dims = (name: string): readonly number[] => emit.dims(name);
  // One set of scaled scalars per learning-rate group.
  const scaledHyper = new Map<number, Record<string, string>>([[1, hyper]]);
  const hyperOf = (scale: number): Record<string, string> => {
    let scaled = scaledHyper.get(scale);
    if (scaled === undefined) {
      scaled = spec.optimizer.scaledHyper(emit, hyper, scale);
      scaledHyper.set(scale, scaled);
    }
    return scaled;
  };
  const updates: StateUpdate[] = [];
  const slotIo: { input: string; next: string; dims: readonly number[] }[] = [];
  for (const p of spec.trained) {
    const gradient = gradients.get(p);
    if (gradient === undefined) continue; // unused by the output: PyTorch leaves such a parameter (and its slots) alone
    const slots = slotInputs.get(p) ?? {};
    const update = spec.optimizer.emitUpdate(emit, p, gradient, slots, hyperOf(spec.learningRateScales?.get(p) ?? 1), spec.decayed.has(p));
    updates.push({ state: p, next: update.param });
    for (const [slot, input] of Object.entries(slots)) {
      updates.push({ state: input, next: update.slots[slot] as string });
      slotIo.push({ input, next: nextName(input), dims: dims(p) });
    }
  }
  // Each next value is written under its output name (`<state>:next`) by the node computing it: no copy.
  const stepNodes: NodeProto[] = renameValues(emit.nodes, new Map(updates.map((u) => [u.next, nextName(u.state)])));
  renameValues(forwardNodes, new Map(forward.stateUpdates.map((u) => [u.next, nextName(u.state)])));
  // The backward's and the optimiser's nodes, before the gradient outputs join the step graph's.
  const [backwardNodes, updateNodes] = [stepNodes.slice(0, backwardNodeCount), stepNodes.slice(backwardNodeCount)];
  const gradientIo: Record<string, string> = {};
  if (spec.gradientOutputs) {
    for (const [p, g] of gradients) {
      gradientIo[p] = `${p}:grad`;
      stepNodes.push(protoNode('Identity', [g], [gradientIo[p]]));
    }
  }

  // What crosses from the forward graph to the step graph: forward values the backward and the updates read.
  const produced = new Set(forwardNodes.flatMap((n) => n.output ?? []));
  const readByStep = new Set(stepNodes.flatMap((n) => n.input ?? []));
  const saved = [...produced].filter((name) => readByStep.has(name));
  const stepData = [...spec.inputDims.keys()].filter((name) => readByStep.has(name));
  const readByForward = new Set(forwardNodes.flatMap((n) => n.input ?? []));
  const forwardVariables = [...variables].filter((name) => readByForward.has(name)).map((name) => ({ input: name, dims: dims(name) }));
  const updated = new Set([...updates, ...forward.stateUpdates].map((u) => u.state));
  const forwardUpdates = forward.stateUpdates.map((u) => ({ input: u.state, next: nextName(u.state) }));
  const stepVariables: StepGraphIo['variables'] = [
    ...slotIo,
    ...[...variables].filter((name) => readByStep.has(name) || updated.has(name)).map((name) => (updated.has(name) ? { input: name, next: nextName(name), dims: dims(name) } : { input: name, dims: dims(name) })),
  ];
  const typeOf = (name: string): 'float32' | 'int64' => (emit.typeOf(name) === 'int64' ? 'int64' : 'float32');

  const forwardModel = modelOf(
    emit,
    'dmlkit_training_forward',
    [...[...spec.inputDims.keys()].map((n) => valueInfo(n, 'float32', dims(n))), ...forwardVariables.map((v) => valueInfo(v.input, 'float32', v.dims))],
    [
      valueInfo(spec.output, 'float32', dims(spec.output)),
      ...saved.filter((n) => n !== spec.output).map((n) => untypedShape(n, typeOf(n))),
      ...forwardUpdates.map((u) => valueInfo(u.next, 'float32', dims(u.input))),
    ],
    forwardNodes,
  );
  const stepModel = modelOf(
    emit,
    'dmlkit_training_step',
    [
      untypedShape(seed, 'float32'),
      ...stepVariables.filter((v) => readByStep.has(v.input)).map((v) => valueInfo(v.input, 'float32', v.dims)),
      ...Object.values(hyper).filter((n) => readByStep.has(n)).map((n) => valueInfo(n, 'float32', [])),
      ...saved.map((n) => untypedShape(n, typeOf(n))),
      ...stepData.map((n) => valueInfo(n, 'float32', dims(n))),
    ],
    [
      ...stepVariables.flatMap((v) => (v.next && !forwardUpdates.some((u) => u.input === v.input) ? [valueInfo(v.next, 'float32', v.dims)] : [])),
      ...Object.entries(gradientIo).map(([p, g]) => valueInfo(g, 'float32', dims(p))),
    ],
    stepNodes,
  );
  const fusedModel = spec.fused
    ? modelOf(
        emit,
        'dmlkit_training_fused_step',
        [
          ...[...spec.inputDims.keys()].map((n) => valueInfo(n, 'float32', dims(n))),
          valueInfo(seed, 'float32', dims(spec.output)),
          ...[...new Map([...forwardVariables, ...stepVariables].filter((v) => readByForward.has(v.input) || readByStep.has(v.input)).map((v) => [v.input, v])).values()].map((v) => valueInfo(v.input, 'float32', v.dims)),
          ...Object.values(hyper).filter((n) => readByStep.has(n)).map((n) => valueInfo(n, 'float32', [])),
        ],
        [
          valueInfo(spec.output, 'float32', dims(spec.output)),
          ...spec.fused.outputs.map((n) => valueInfo(n, typeOf(n), dims(n))),
          ...forwardUpdates.map((u) => valueInfo(u.next, 'float32', dims(u.input))),
          ...stepVariables.flatMap((v) => (v.next && !forwardUpdates.some((u) => u.input === v.input) ? [valueInfo(v.next, 'float32', v.dims)] : [])),
          ...Object.entries(gradientIo).map(([p, g]) => valueInfo(g, 'float32', dims(p))),
        ],
        [...forwardNodes, ...stepNodes],
      )
    : undefined;
  const accumulation = spec.accumulation ? accumulationGraphs(emit, backwardNodes, updateNodes, gradients, dims) : undefined;
  // The embedding forward: the training forward's nodes, only the output and the running statistics' next values leaving.
  const embedModel = accumulation
    ? modelOf(
        emit,
        'dmlkit_training_embed',
        [...[...spec.inputDims.keys()].map((n) => valueInfo(n, 'float32', dims(n))), ...forwardVariables.map((v) => valueInfo(v.input, 'float32', v.dims))],
        [valueInfo(spec.output, 'float32', dims(spec.output)), ...forwardUpdates.map((u) => valueInfo(u.next, 'float32', dims(u.input)))],
        forwardNodes,
      )
    : undefined;
  return {
    forwardModel,
    stepModel,
    ...(fusedModel ? { fusedModel } : {}),
    ...(accumulation && embedModel ? { accumulation: { embedModel, ...accumulation } } : {}),
    io: {
      data: [...spec.inputDims.keys()],
      output: spec.output,
      outputDims: dims(spec.output),
      forwardVariables,
      forwardUpdates,
      saved,
      stepData,
      seed,
      variables: stepVariables.filter((v) => readByStep.has(v.input) || (v.next && !forwardUpdates.some((u) => u.input === v.input))),
      hyper: Object.fromEntries(Object.entries(hyper).filter(([, n]) => readByStep.has(n))),
      gradients: gradientIo,
    },
  };
}

/**
 * The gradient, gradient-sum and update graphs of {@link AccumulationGraphs} from the step graph's nodes: `backward`
 * (the backward pass, each trained parameter's gradient in `gradients`) and `update` (the optimiser's
 * nodes, which read those gradients; copied with each gradient renamed to the update graph's input
 * `<param>:grad`). Each graph's inputs are the values its nodes read that none of them computes.
 */
function accumulationGraphs(
  emit: StepEmitter,
  backward: readonly NodeProto[],
  update: readonly NodeProto[],
  gradients: ReadonlyMap<string, string>,
  dims: (name: string) => readonly number[],
): Omit<AccumulationGraphs, 'embedModel'> {
  const gradientIo = new Map([...gradients.keys()].map((p) => [p, `${p}:grad`]));
  const renamed = new Map([...gradients].map(([p, g]) => [g, gradientIo.get(p) as string]));
  const updateNodes = update.map((n) => ({ ...n, input: (n.input ?? []).map((v) => renamed.get(v) ?? v) }));
  const gradientNodes = [...backward, ...[...gradients].map(([p, g]) => protoNode('Identity', [g], [gradientIo.get(p) as string]))];
  const constants = new Set(emit.initializers.map((t) => t.name ?? ''));
  /** The values `nodes` read that none of them computes and that are not constants: the graph's inputs. */
  const inputsOf = (nodes: readonly NodeProto[]): string[] => {
    const computed = new Set(nodes.flatMap((n) => n.output ?? []));
    return [...new Set(nodes.flatMap((n) => n.input ?? []))].filter((v) => v !== '' && !computed.has(v) && !constants.has(v));
  };
  const typed = (name: string): ValueInfoProto => (emit.typeOf(name) === 'int64' ? untypedShape(name, 'int64') : untypedShape(name, 'float32'));
  const gradientOutputs = [...gradientIo].map(([p, g]) => valueInfo(g, 'float32', dims(p)));
  const gradientModel = modelOf(emit, 'dmlkit_training_gradient', inputsOf(gradientNodes).map(typed), gradientOutputs, gradientNodes);
  const sumIo = new Map([...gradients.keys()].map((p) => [p, `${p}:grad_sum`]));
  const sumNodes = [...backward, ...[...gradients].map(([p, g]) => protoNode('Add', [sumIo.get(p) as string, g], [gradientIo.get(p) as string]))];
  const gradientSumModel = modelOf(
    emit,
    'dmlkit_training_gradient_sum',
    [...inputsOf(backward).map(typed), ...[...sumIo].map(([p, input]) => valueInfo(input, 'float32', dims(p)))],
    gradientOutputs,
    sumNodes,
  );
  const paramOfGradient = new Map([...gradientIo].map(([p, g]) => [g, p]));
  const updateOutputs = [...new Set(updateNodes.flatMap((n) => n.output ?? []))].filter((v) => v.endsWith(':next'));
  const updateModel = modelOf(
    emit,
    'dmlkit_training_update',
    inputsOf(updateNodes).map((v) => {
      const param = paramOfGradient.get(v);
      return param !== undefined ? valueInfo(v, 'float32', dims(param)) : typed(v);
    }),
    updateOutputs.map((v) => untypedShape(v, 'float32')),
    updateNodes,
  );
  return { gradientModel, gradientSumModel, updateModel, gradients: Object.fromEntries(gradientIo), gradientSums: Object.fromEntries(sumIo) };
}
