/**
 * @file A downloaded or PyTorch-exported ONNX network made into an embedder the graph trainer can
 * fine-tune: cut at a named value, given a new embedding head, L2-normalised, optionally fed NHWC images.
 *
 *     input ─(Transpose, with inputLayout NHWC)─► the network up to `output` ─► head ─► L2 normalisation ─► embedding
 *
 * The head (PyTorch's usual metric-learning head): global pooling of a feature map (`avg`, `max`, or
 * `avgmax`: both concatenated), flattening, an optional BatchNorm neck (BatchNorm1d: γ 1, β 0, running
 * mean 0, variance 1, PyTorch's momentum 0.1 and ε 1e-5), and a Linear layer to `embeddingDim` with
 * PyTorch's default initialisation (weight and bias uniform in ±1/sqrt(fan_in)), drawn from a seeded
 * generator. The L2 normalisation is dmlkit's (l2Normalize in lib/engine/graph/graph-builder.ts, ε 1e-12). Nodes of the
 * network that the cut leaves without a use are dropped with their initializers.
 */
import { DmlError, invalidParameterError } from '../../errors.js';
import { GraphBuilder, l2Normalize } from './graph-builder.js';
import { decodeModel, describeValueInfo, encodeModel, int64Value, node as protoNode, tensorValueInfo, type NodeProto } from '../../onnx/builder.js';
import { MAX_MODEL_FILE_BYTES } from '../../onnx/model-files.js';
import { Rng } from '../../util/rng.js';
import { readOnnxGraph } from './onnx-ir.js';
import { inferShapes } from './shapes.js';

/** The prefix of the new head's weight names (`head/fc.weight`, `head/neck.bias`, ...): everything else is the network's. */
export const HEAD_WEIGHT_PREFIX = 'head/';

/** GeM's default exponent (Radenović et al.'s fixed p). */
export const GEM_DEFAULT_P = 3;

/** GeM's floor before the power: cirtorch's `eps`. */
const GEM_EPSILON = 1e-6;

/**
 * The exponents GeM accepts. Below 0.1, x^p of float32 features is all but 1 whatever x is (at 1e-30
 * exactly 1: every image pools to the same vector and nothing trains); above 50, x^p overflows float32
 * for any feature above e^(88.7/50) = 5.9 (at 1e6 for any feature above 1). Max pooling is `pooling: 'max'`.
 */
export const GEM_P_RANGE = [0.1, 50] as const;

/** The new head of {@link prepareEmbeddingNetwork}. */
export interface EmbeddingHeadSpec {
  /**
   * Global pooling of a feature map [N, C, H, W] (ignored for features [N, C]); default `avg`. `gem`:
   * generalised mean pooling (Radenović et al., 2018), `(mean(max(x, 1e-6)^p))^(1/p)` per channel,
   * with the fixed exponent {@link gemP}.
   */
  readonly pooling?: 'avg' | 'max' | 'avgmax' | 'gem' | undefined;
  /** GeM's exponent p (`pooling: 'gem'`), in [0.1, 50] (`GEM_P_RANGE`); default 3 (1 is average pooling, large p approaches max pooling). */
  readonly gemP?: number | undefined;
  /** A BatchNorm neck before the Linear layer; default false. */
  readonly batchNorm?: boolean | undefined;
  /** Width of the embedding. */
  readonly embeddingDim: number;
}

/** Options of {@link prepareEmbeddingNetwork}. */
export interface EmbeddingNetworkOptions {
  /** One image's dimensions as the network takes it, [C, H, W] (needed to know the cut value's shape). */
  readonly itemDims: readonly number[];
  /** The value the network ends at: a node output; default the model's first output. */
  readonly output?: string;
  /** A new head after `output`; without one, `output` must be [batch, dim] features. */
  readonly head?: EmbeddingHeadSpec;
  /** `NHWC`: the returned network takes [batch, H, W, C] images (a Transpose is prepended); default the model's own `NCHW`. */
  readonly inputLayout?: 'NCHW' | 'NHWC';
  /** Seed of the head's initial weights; default 0. */
  readonly seed?: number;
  /** Names the model in errors. */
  readonly name?: string;
}

/** PyTorch's default initialisation of a Linear layer: weight [out, in] and bias uniform in ±1/sqrt(in). */
function linearInit(rng: Rng, inputs: number, outputs: number): { weight: Float32Array; bias: Float32Array } {
  const bound = 1 / Math.sqrt(inputs);
  const draw = (): number => (2 * rng.next() - 1) * bound;
  return { weight: Float32Array.from({ length: outputs * inputs }, draw), bias: Float32Array.from({ length: outputs }, draw) };
}

/**
 * The network in `bytes` as an embedder (see the file comment), serialised. Throws E_MODEL when the
 * output to cut at does not exist or does not have a shape the head takes, E_ARG for bad options.
 */
export function prepareEmbeddingNetwork(bytes: Uint8Array, options: EmbeddingNetworkOptions): Uint8Array {
  const name = options.name ?? 'model';
  const model = decodeModel(bytes, name);
  const graph = model.graph ?? {};
  const initializerNames = new Set((graph.initializer ?? []).map((t) => t.name ?? ''));
  const inputs = (graph.input ?? []).filter((i) => !initializerNames.has(i.name ?? ''));
  const input = inputs[0];
  if (!input || inputs.length !== 1) throw new DmlError('E_MODEL', `${name} has ${inputs.length} data inputs; an embedder takes one image input`);
  const inputName = input.name ?? '';
  const output = options.output ?? graph.output?.[0]?.name ?? '';
  const nodes = graph.node ?? [];
  if (!nodes.some((n) => (n.output ?? []).includes(output))) {
    throw new DmlError('E_MODEL', `${name} has no node output named '${output}' to end the network at`);
  }
  if (options.itemDims.length !== 3 || options.itemDims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
    throw invalidParameterError('itemDims', '[channels, height, width] as positive integers', options.itemDims);
  }
  const declared = describeValueInfo(input).dims ?? [];
  options.itemDims.forEach((d, i) => {
    const fixed = declared[i + 1];
    if (typeof fixed === 'number' && fixed !== d) {
      throw invalidParameterError(`itemDims[${i}]`, `${fixed}, as ${name}'s input ${inputName} [${declared.join(', ')}] says`, d);
    }
  });
  const embeddingDim = options.head?.embeddingDim;
  if (options.head && (!Number.isSafeInteger(embeddingDim) || (embeddingDim as number) < 1)) throw invalidParameterError('head.embeddingDim', 'a positive integer', embeddingDim);

  // The cut: the nodes `output` depends on, in their order, and the initializers they read.
  const needed = new Set([output]);
  const kept: NodeProto[] = [];
  for (const n of [...nodes].reverse()) {
    if (!(n.output ?? []).some((o) => needed.has(o))) continue;
    kept.unshift(n);
    for (const i of n.input ?? []) if (i) needed.add(i);
  }
  const initializers = (graph.initializer ?? []).filter((t) => needed.has(t.name ?? ''));
  const opsetImports = (model.opsetImport ?? []).map((o) => ({ domain: o.domain ?? '', version: int64Value(o.version) ?? 0 }));
  const irVersion = int64Value(model.irVersion) ?? 8;
  const cutModel = encodeModel({ graphName: graph.name ?? name, inputs: [input], outputs: [{ name: output, type: { tensorType: { elemType: 1 } } }], nodes: kept, initializers, opsetImports, irVersion });

  // The cut value's shape at batch 2 (the head's widths follow from it).
  const cutGraph = readOnnxGraph(cutModel, name);
  const shapes = inferShapes(cutGraph, new Map([[inputName, [2, ...options.itemDims]]]), new Set()).shapes;
  const featureDims = shapes.get(output)?.dims ?? [];
  const shown = `[${['N', ...featureDims.slice(1)].join(', ')}]`;

  const g = new GraphBuilder();
  const outputName = 'embedding';
  g.reserve(outputName);
  let features = output;
  // The network's own value named like the new output (a PyTorch export's `embedding`) is renamed.
  const taken = new Set([inputName, ...kept.flatMap((k) => [...(k.input ?? []), ...(k.output ?? [])]), ...initializers.map((t) => t.name ?? '')]);
  for (const n of taken) if (n !== outputName) g.reserve(n);
  // A new node takes its output's name as its own (onnx/builder.ts): the network's node names are taken
  // too, so that none is given twice (dmlkit's own models/default.onnx ends in a node named `embedding`).
  const nodeNames = new Set(kept.map((k) => k.name ?? '').filter((n) => n !== ''));
  for (const n of nodeNames) if (n !== outputName) g.reserve(n);
  if (taken.has(outputName)) {
    const renamed = g.unique('network/embedding');
    for (const k of kept) {
      k.input = (k.input ?? []).map((i) => (i === outputName ? renamed : i));
      k.output = (k.output ?? []).map((o) => (o === outputName ? renamed : o));
    }
    if (features === outputName) features = renamed;
  }
  if (options.head) {
    const rng = new Rng(options.seed ?? 0);
    let width: number;
    if (featureDims.length === 4) {
      const pooling = options.head.pooling ?? 'avg';
      const pooled = [];
      if (pooling === 'gem') {
        const p = options.head.gemP ?? GEM_DEFAULT_P;
        if (!(p >= GEM_P_RANGE[0] && p <= GEM_P_RANGE[1])) throw invalidParameterError('head.gemP', `a number in [${GEM_P_RANGE.join(', ')}] (float32 keeps GeM meaningful there)`, p);
        const clamped = g.op('Clip', [features, g.floats('head/gem.eps', [], [GEM_EPSILON])], 'head/gem_clamp');
        const averaged = g.op('GlobalAveragePool', [g.op('Pow', [clamped, g.floats('head/gem.p', [], [p])], 'head/gem_pow')], 'head/gem_mean');
        pooled.push(g.op('Pow', [averaged, g.floats('head/gem.inverse_p', [], [1 / p])], 'head/gem'));
      }
      if (pooling === 'avg' || pooling === 'avgmax') pooled.push(g.op('GlobalAveragePool', [features], 'head/gap'));
      if (pooling === 'max' || pooling === 'avgmax') pooled.push(g.op('GlobalMaxPool', [features], 'head/gmp'));
      features = pooled.length > 1 ? g.op('Concat', pooled, 'head/pool', { axis: { i: 1 } }) : (pooled[0] as string);
      features = g.op('Flatten', [features], 'head/flat', { axis: { i: 1 } });
      width = (featureDims[1] as number) * pooled.length;
    } else if (featureDims.length === 2) {
      width = featureDims[1] as number;
    } else {
      throw new DmlError('E_MODEL', `${name}: '${output}' has shape ${shown}; a head takes a feature map [N, C, H, W] or features [N, C]`);
    }
    if (options.head.batchNorm) {
      const ones = new Float32Array(width).fill(1);
      const zeros = new Float32Array(width);
      features = g.op(
        'BatchNormalization',
        [features, g.floats('head/neck.weight', [width], ones), g.floats('head/neck.bias', [width], zeros), g.floats('head/neck.running_mean', [width], zeros), g.floats('head/neck.running_var', [width], ones)],
        'head/neck',
        { epsilon: { f: 1e-5 }, momentum: { f: 0.9 } },
      );
    }
    // The Linear layer's weight must fit in an ONNX file (protobuf's 2 GiB), as the trained network is one.
    if ((embeddingDim as number) * width * 4 >= MAX_MODEL_FILE_BYTES) {
      throw invalidParameterError('head.embeddingDim', `at most ${Math.floor((MAX_MODEL_FILE_BYTES / 4 - 1) / width)} (its Linear layer from ${width} features must fit in an ONNX file, 2 GiB)`, embeddingDim);
    }
    const { weight, bias } = linearInit(rng, width, embeddingDim as number);
    features = g.op('Gemm', [features, g.floats('head/fc.weight', [embeddingDim as number, width], weight), g.floats('head/fc.bias', [embeddingDim as number], bias)], 'head/fc', {
      alpha: { f: 1 },
      beta: { f: 1 },
      transB: { i: 1 },
    });
  } else if (featureDims.length !== 2) {
    throw new DmlError('E_MODEL', `${name}: '${output}' has shape ${shown}; without a head the network must end in features [N, D]`);
  }
  const normalized = l2Normalize(g, features, 'head/l2norm', 1e-12);
  const tail = [...g.nodes, protoNode('Identity', [normalized], [outputName], {}, nodeNames.has(outputName) ? g.unique(`${outputName}/output`) : outputName)];

  let head: NodeProto[] = [];
  let imageInput = input;
  if ((options.inputLayout ?? 'NCHW') === 'NHWC') {
    // The original input becomes an inner value fed by a transpose of the NHWC images.
    const inner = g.unique(`${inputName}/nchw`);
    for (const n of kept) n.input = (n.input ?? []).map((i) => (i === inputName ? inner : i));
    head = [protoNode('Transpose', [inputName], [inner], { perm: { ints: [0, 3, 1, 2] } })];
    const [channels, height, width] = options.itemDims as [number, number, number];
    imageInput = tensorValueInfo(inputName, 'float32', ['batch', height, width, channels]);
  }
  const outputDim = options.head ? (embeddingDim as number) : (featureDims[1] as number);
  return encodeModel({
    graphName: graph.name ?? name,
    inputs: [imageInput],
    outputs: [tensorValueInfo(outputName, 'float32', ['batch', outputDim])],
    nodes: [...head, ...kept, ...tail],
    initializers: [...initializers, ...g.initializers],
    opsetImports,
    irVersion,
  });
}
