/**
 * @file Composition: a frozen ONNX backbone and a head converted from TensorFlow.js become one graph
 * that maps images to embeddings.
 *
 * The trainer's feature recipe (lib/train/models/backbone-features.ts) trains the head on the
 * backbone's output after L2 normalisation (dmlkit's embedder normalises every row), so the merged
 * graph is backbone -> L2 normalisation (the "seam") -> head. Names are made disjoint by prefixing:
 * every backbone value, initializer and node gets `backbone/` (inside control-flow subgraphs too, so
 * their outer-scope references stay intact), seam values `seam/`, head values `head/`; only the
 * backbone's image input keeps its name and the head's output stays `embedding`.
 *
 * Checks at the seam: the backbone has exactly one non-initializer input; its feature output exists,
 * is declared rank 2 when declared at all, and has the head's input width when that is fixed (a
 * symbolic width is checked when the parity run executes the backbone). The merged model keeps the
 * backbone's operator-set imports, so its nodes keep their meaning; the head's operators (see
 * lib/engine/tfjs/layer-converters.ts) mean the same at every default-domain opset from 13 to 17, which is therefore
 * the range accepted. Backbones with weights in external files, sparse initializers or model-local
 * functions are refused with a message saying so.
 */
import { DmlError } from '../errors.js';
import {
  describeValueInfo,
  int64Value,
  ONNX_IR_VERSION,
  type AttributeProto,
  type Dim,
  type GraphProto,
  type ModelProto,
  type NodeProto,
  type OperatorSetId,
  type TensorProto,
  type ValueInfoProto,
} from '../onnx/builder.js';
import { GraphBuilder, l2Normalize } from '../engine/graph/graph-builder.js';
import type { ConvertedModel } from '../engine/tfjs/tfjs-to-onnx.js';

/** Default-domain opsets a backbone may use (the head's operators are stable over this range). */
export const COMPOSABLE_OPSETS = { min: 13, max: 17 } as const;

/** Epsilon of the seam's L2 normalisation (as in the L2Normalize layer). */
export const SEAM_EPSILON = 1e-12;

/** Options of {@link composeBackboneAndHead}. */
export interface ComposeOptions {
  /** The decoded backbone (builder's decodeModel). */
  backbone: ModelProto;
  /** Names the backbone in errors. */
  backboneName: string;
  /** Backbone output holding the features; default its first output. */
  backboneOutput?: string;
  /** The head, converted with a rank-2 features input. */
  head: ConvertedModel;
}

/** A composed graph, ready for encodeModel. */
export interface ComposedModel {
  inputs: ValueInfoProto[];
  outputs: ValueInfoProto[];
  nodes: NodeProto[];
  initializers: TensorProto[];
  valueInfo: ValueInfoProto[];
  opsetImports: OperatorSetId[];
  irVersion: number;
  /** The backbone's image input. */
  inputName: string;
  inputDims: Dim[];
  outputName: string;
  /** The backbone's feature output as declared ([batch, D]). */
  featureDims: Dim[];
}

function fail(name: string, problem: string): DmlError {
  return new DmlError('E_MODEL', `Cannot compose backbone ${name} with the head: ${problem}`);
}

function renameAttribute(attribute: AttributeProto, rename: (name: string) => string): AttributeProto {
  if (!attribute.g && !(attribute.graphs && attribute.graphs.length > 0)) return attribute;
  return {
    ...attribute,
    ...(attribute.g ? { g: renameGraph(attribute.g, rename) } : {}),
    ...(attribute.graphs && attribute.graphs.length > 0 ? { graphs: attribute.graphs.map((sub) => renameGraph(sub, rename)) } : {}),
  };
}

/** `graph` with every value, initializer and node name passed through `rename` (empty names stay empty). */
function renameGraph(graph: GraphProto, rename: (name: string) => string): GraphProto {
  const r = (name: string | null | undefined): string => (name ? rename(name) : '');
  const info = (v: ValueInfoProto): ValueInfoProto => ({ ...v, name: r(v.name) });
  return {
    ...graph,
    input: (graph.input ?? []).map(info),
    output: (graph.output ?? []).map(info),
    valueInfo: (graph.valueInfo ?? []).map(info),
    initializer: (graph.initializer ?? []).map((t) => ({ ...t, name: r(t.name) })),
    node: (graph.node ?? []).map((n) => ({
      ...n,
      name: r(n.name),
      input: (n.input ?? []).map(r),
      output: (n.output ?? []).map(r),
      attribute: (n.attribute ?? []).map((a) => renameAttribute(a, rename)),
    })),
  };
}

function opsetImportsOf(model: ModelProto, name: string): OperatorSetId[] {
  const imports = (model.opsetImport ?? []).map((o) => ({
    domain: o.domain === 'ai.onnx' ? '' : (o.domain ?? ''),
    version: int64Value(o.version) ?? 0,
  }));
  const main = imports.find((o) => o.domain === '');
  if (main === undefined || main.version < COMPOSABLE_OPSETS.min || main.version > COMPOSABLE_OPSETS.max) {
    throw fail(
      name,
      `it uses default-domain opset ${main?.version ?? 'none'}; expected ${COMPOSABLE_OPSETS.min} to ${COMPOSABLE_OPSETS.max} (re-export the backbone at such an opset)`,
    );
  }
  return imports;
}

/**
 * Merges `options.backbone` and `options.head` into one graph; see the file comment.
 * Errors: E_MODEL naming the backbone and the problem.
 */
export function composeBackboneAndHead(options: ComposeOptions): ComposedModel {
  const { backbone, backboneName: name, head } = options;
  const graph = backbone.graph;
  if (!graph) throw fail(name, 'it has no graph');
  if ((backbone.functions ?? []).length > 0) throw fail(name, 'it defines model-local functions, which dmlkit cannot merge');
  if ((graph.sparseInitializer ?? []).length > 0) throw fail(name, 'it has sparse initializers, which dmlkit cannot merge');
  const external = (graph.initializer ?? []).find((t) => t.dataLocation === 1 || (t.externalData ?? []).length > 0);
  if (external) throw fail(name, `its initializer ${external.name ?? ''} is stored in an external file; save the backbone with its weights inside`);
  const opsetImports = opsetImportsOf(backbone, name);

  const initializerNames = new Set((graph.initializer ?? []).map((t) => t.name ?? ''));
  const imageInputs = (graph.input ?? []).filter((v) => !initializerNames.has(v.name ?? ''));
  if (imageInputs.length !== 1) throw fail(name, `expected one image input but it has ${imageInputs.length} (${imageInputs.map((v) => v.name).join(', ')})`);
  const imageInput = imageInputs[0] as ValueInfoProto;
  const inputName = imageInput.name ?? '';
  const outputs = graph.output ?? [];
  const featureName = options.backboneOutput ?? outputs[0]?.name ?? '';
  const feature = outputs.find((o) => o.name === featureName);
  if (!feature) throw fail(name, `it has no output ${JSON.stringify(featureName)} (outputs: ${outputs.map((o) => o.name).join(', ') || 'none'})`);

  if (head.inputDims.length !== 2) throw fail(name, `the head takes [${head.inputDims.join(', ')}]; expected feature vectors [batch, D]`);
  const headWidth = head.inputDims[1];
  const declared = describeValueInfo(feature);
  const featureDims = declared.dims ?? ['batch', headWidth as Dim];
  if (declared.elementType !== undefined && declared.elementType !== 'float32') {
    throw fail(name, `its output ${featureName} is ${declared.elementType}; expected float32 features`);
  }
  if (featureDims.length !== 2) throw fail(name, `its output ${featureName} has shape [${featureDims.join(', ')}]; expected [batch, D]`);
  if (typeof featureDims[1] === 'number' && typeof headWidth === 'number' && featureDims[1] !== headWidth) {
    throw fail(name, `its output ${featureName} has ${featureDims[1]} features but the head takes ${headWidth}`);
  }

  const renamed = renameGraph(graph, (n) => (n === inputName ? n : `backbone/${n}`));
  const seam = new GraphBuilder();
  const features = l2Normalize(seam, `backbone/${featureName}`, 'seam/features', SEAM_EPSILON);
  const headRenamed = renameGraph(
    { input: head.inputs, output: head.outputs, node: head.nodes, initializer: head.initializers },
    (n) => (n === head.inputName ? features : n === head.outputName ? n : `head/${n}`),
  );

  // The seam's shared constants are named without a prefix; give them one.
  const seamGraph = renameGraph({ node: seam.nodes, initializer: seam.initializers }, (n) => (/^(seam|backbone)\//.test(n) ? n : `seam/${n}`));
  const initializers = [...(renamed.initializer ?? []), ...(seamGraph.initializer ?? []), ...(headRenamed.initializer ?? [])];
  const nodes = [...(renamed.node ?? []), ...(seamGraph.node ?? []), ...(headRenamed.node ?? [])];

  const defined = [inputName, ...initializers.map((t) => t.name ?? ''), ...nodes.flatMap((n) => n.output ?? [])].filter((n) => n !== '');
  const seen = new Set<string>();
  for (const n of defined) {
    if (seen.has(n)) throw fail(name, `the merged graph would define ${n} twice`);
    seen.add(n);
  }
  return {
    inputs: [{ ...imageInput }],
    outputs: headRenamed.output ?? [],
    nodes,
    initializers,
    valueInfo: [...(renamed.valueInfo ?? []), ...(renamed.output ?? [])],
    opsetImports,
    irVersion: Math.max(ONNX_IR_VERSION, int64Value(backbone.irVersion) ?? 0),
    inputName,
    inputDims: describeValueInfo(imageInput).dims ?? [],
    outputName: head.outputName,
    featureDims,
  };
}
