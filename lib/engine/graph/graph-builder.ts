/**
 * @file An ONNX graph under construction: nodes and initializers with unique value names, shared scalar
 * constants, and L2 normalisation written as nodes. The TensorFlow.js converter
 * (lib/engine/tfjs/onnx-graph.ts, with its layout bookkeeping), the graph trainer's step emitter
 * (lib/engine/autodiff/emitter.ts), the embedding head of an ONNX network (embedding-network.ts) and
 * the exporter's composition (lib/export/compose.ts) build on it.
 */
import { floatTensor, int64Tensor, node, type AttributeValue, type NodeProto, type TensorProto } from '../../onnx/builder.js';

/** Nodes and initializers of a graph being built, with unique value names. */
export class GraphBuilder {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly used = new Set<string>();
  private readonly scalars = new Map<number, string>();

  /** A fresh value name: `base`, or `base_2`, `base_3`, ... when taken. */
  unique(base: string): string {
    let name = base;
    for (let i = 2; this.used.has(name); i++) name = `${base}_${i}`;
    this.used.add(name);
    return name;
  }

  /** Marks `name` as taken (graph inputs). */
  reserve(name: string): void {
    this.used.add(name);
  }

  /** A float32 initializer named after `base`; returns its name. */
  floats(base: string, dims: readonly number[], values: Float32Array | readonly number[]): string {
    const name = this.unique(base);
    this.initializers.push(floatTensor(name, dims, values));
    return name;
  }

  /** An int64 initializer named after `base`; returns its name. */
  int64s(base: string, dims: readonly number[], values: readonly number[]): string {
    const name = this.unique(base);
    this.initializers.push(int64Tensor(name, dims, values));
    return name;
  }

  /** A float32 scalar initializer, shared by every use of the same value. */
  scalar(value: number): string {
    let name = this.scalars.get(value);
    if (name === undefined) {
      name = this.floats(`const_${String(value).replace(/[^0-9a-zA-Z]/g, '_')}`, [], [value]);
      this.scalars.set(value, name);
    }
    return name;
  }

  /** Adds a node with one output named after `base`; returns the output's name. */
  op(opType: string, inputs: readonly string[], base: string, attributes: Readonly<Record<string, AttributeValue>> = {}): string {
    const output = this.unique(base);
    this.nodes.push(node(opType, inputs, [output], attributes));
    return output;
  }

  /** {@link op} for an operator of another domain than ONNX's (onnxruntime's contrib operators). */
  opOfDomain(domain: string, opType: string, inputs: readonly string[], base: string, attributes: Readonly<Record<string, AttributeValue>> = {}): string {
    const output = this.unique(base);
    this.nodes.push({ ...node(opType, inputs, [output], attributes), domain });
    return output;
  }
}

/**
 * Adds x / sqrt(sum(x², last axis) + epsilon) for `x`, the computation of the L2Normalize layer
 * (lib/train/models/l2-normalize.ts); returns the output's name.
 */
export function l2Normalize(g: GraphBuilder, x: string, base: string, epsilon: number): string {
  const squared = g.op('Mul', [x, x], `${base}/squared`);
  const sum = g.op('ReduceSum', [squared, g.int64s(`${base}/axes`, [1], [-1])], `${base}/sum`, { keepdims: { i: 1 } });
  const norm = g.op('Sqrt', [g.op('Add', [sum, g.scalar(epsilon)], `${base}/sum_eps`)], `${base}/norm`);
  return g.op('Div', [x, norm], base);
}
