/**
 * @file bfloat16 model inputs and outputs behind float32 ones.
 *
 * onnxruntime-node 1.30 cannot open a model with a bfloat16 graph input or output at all: its
 * JavaScript binding has no bfloat16 tensor type and throws `Unsupported data type: 16` while listing
 * the model's inputs (measured), so the cast cannot be done on the JavaScript side as it is for
 * float16. Instead the model is rewritten in memory: each bfloat16 input becomes a float32 input
 * followed by `Cast(to=BFLOAT16)`, each bfloat16 output a `Cast(to=FLOAT)` of the original value, so
 * the graph computes exactly what it did on the same bfloat16 values (the Cast rounds to nearest
 * even, as a cast in JavaScript would). The model's files are not touched and its identity is theirs.
 */
import onnxProto from 'onnx-proto';
import { DmlError } from '../errors.js';
import { decodeModel, type GraphProto, type NodeProto } from './builder.js';

const { onnx } = onnxProto;
const FLOAT = onnx.TensorProto.DataType.FLOAT;
const BFLOAT16 = onnx.TensorProto.DataType.BFLOAT16;

/** onnxruntime-node's message when a model has a bfloat16 input or output. */
export const BFLOAT16_UNSUPPORTED = /Unsupported data type: 16\b/;

function renameInputs(graph: GraphProto, from: string, to: string): void {
  for (const n of graph.node ?? []) {
    n.input = (n.input ?? []).map((name) => (name === from ? to : name));
    // Subgraphs (If, Loop, Scan) may use the value from the outer scope by name.
    for (const attribute of n.attribute ?? []) {
      if (attribute.g) renameInputs(attribute.g, from, to);
      for (const g of attribute.graphs ?? []) renameInputs(g, from, to);
    }
  }
}

/** A model with its bfloat16 inputs and outputs made float32, and the names of those it widened. */
export interface WidenedModel {
  bytes: Uint8Array;
  inputs: string[];
  outputs: string[];
}

/**
 * The model in `bytes` with its bfloat16 inputs and outputs made float32 (see the file comment), or
 * undefined when it has none. `name` names the model in errors (E_MODEL for unreadable bytes).
 */
export function widenBfloat16Io(bytes: Uint8Array, name: string): WidenedModel | undefined {
  const model = decodeModel(bytes, name);
  const graph = model.graph;
  if (!graph) throw new DmlError('E_MODEL', `${name} has no graph`);
  const isBf16 = (v: { type?: { tensorType?: { elemType?: number | null } | null } | null }): boolean => v.type?.tensorType?.elemType === BFLOAT16;
  const inputs = (graph.input ?? []).filter(isBf16);
  const outputs = (graph.output ?? []).filter(isBf16);
  if (inputs.length === 0 && outputs.length === 0) return undefined;
  const front: NodeProto[] = [];
  const back: NodeProto[] = [];
  const cast = (input: string, output: string, to: number): NodeProto => ({
    opType: 'Cast',
    name: `dmlkit_cast_${output}`,
    input: [input],
    output: [output],
    attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: to }],
  });
  for (const value of inputs) {
    const original = value.name as string;
    const inner = `${original}__dmlkit_bf16`;
    renameInputs(graph, original, inner);
    front.push(cast(original, inner, BFLOAT16));
    (value.type?.tensorType as { elemType: number }).elemType = FLOAT;
  }
  for (const value of outputs) {
    const original = value.name as string;
    const inner = `${original}__dmlkit_bf16`;
    for (const n of graph.node ?? []) n.output = (n.output ?? []).map((o) => (o === original ? inner : o));
    renameInputs(graph, original, inner);
    back.push(cast(inner, original, FLOAT));
    (value.type?.tensorType as { elemType: number }).elemType = FLOAT;
  }
  graph.node = [...front, ...(graph.node ?? []), ...back];
  return { bytes: onnx.ModelProto.encode(model).finish(), inputs: inputs.map((v) => v.name as string), outputs: outputs.map((v) => v.name as string) };
}
