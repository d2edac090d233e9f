/**
 * @file The graph a compilation writes: a {@link GraphBuilder} (lib/engine/graph/graph-builder.ts: unique names, float and int64
 * initializers, shared scalars) plus what gradient rules need: nodes with several outputs, a forward
 * node copied under its own names, 1-D int64 constants shared by value, zeros of a static shape, and
 * the shapes of the forward values.
 */
import { DmlError } from '../../errors.js';
import { node as protoNode, type AttributeValue } from '../../onnx/builder.js';
import { GraphBuilder } from '../graph/graph-builder.js';
import { describeNode, type IrAttribute, type IrElementType, type IrNode, type IrTensor } from '../graph/onnx-ir.js';
import type { ValueShape } from '../graph/shapes.js';

function attributeValue(node: IrNode, name: string, a: IrAttribute): AttributeValue {
  if ('t' in a) throw new DmlError('E_MODEL', `${describeNode(node)}: attribute ${name} holds a tensor, which the graph trainer cannot copy`);
  return a;
}

/** The step graph under construction. */
export class StepEmitter extends GraphBuilder {
  private readonly intConstants = new Map<string, string>();

  /**
   * @param shapes - every forward value's shape (from lib/engine/graph/shapes.ts).
   * @param constants - the forward graph's constants (folded shape computations, frozen initializers).
   * @param nchwcBlock - the channel block of onnxruntime's blocked CPU convolutions (lib/onnx/nchwc.ts)
   *   when the graph is compiled for the CPU provider and they may be used; undefined: ONNX's Conv.
   */
  constructor(
    private readonly shapes: ReadonlyMap<string, ValueShape>,
    private readonly constants: ReadonlyMap<string, IrTensor>,
    readonly nchwcBlock?: number,
  ) {
    super();
    for (const name of shapes.keys()) this.reserve(name);
  }

  /** The dimensions of forward value `name`. */
  dims(name: string): readonly number[] {
    const s = this.shapes.get(name);
    if (!s) throw new DmlError('E_MODEL', `value ${name} has no known shape`);
    return s.dims;
  }

  /** The element type of forward value `name`; undefined for an emitted value (emitted values are float32). */
  typeOf(name: string): IrElementType | undefined {
    return this.shapes.get(name)?.type;
  }

  /** The constant value of forward value `name`, or undefined when it is computed or trained. */
  constant(name: string): IrTensor | undefined {
    return name ? this.constants.get(name) : undefined;
  }

  /** Adds a node with several outputs named after `bases`; returns their names. */
  ops(opType: string, inputs: readonly string[], bases: readonly string[], attributes: Readonly<Record<string, AttributeValue>> = {}): string[] {
    const outputs = bases.map((b) => this.unique(b));
    this.nodes.push(protoNode(opType, inputs, outputs, attributes));
    return outputs;
  }

  /**
   * Adds a node writing the already named value `output` (a forward value the node computes in
   * training mode); `domain`: the operator's, when not ONNX's.
   */
  opInto(opType: string, inputs: readonly string[], output: string, attributes: Readonly<Record<string, AttributeValue>> = {}, domain?: string): void {
    const made = protoNode(opType, inputs, [output], attributes);
    this.nodes.push(domain === undefined ? made : { ...made, domain });
  }

  /** Copies forward node `node` under its own output names (`outputs` overrides them, e.g. to add one). */
  copy(node: IrNode, outputs: readonly string[] = node.outputs): void {
    const attributes: Record<string, AttributeValue> = {};
    for (const [name, a] of node.attributes) attributes[name] = attributeValue(node, name, a);
    this.nodes.push(protoNode(node.opType, node.inputs, outputs, attributes, node.name));
  }

  /** A 1-D int64 constant holding `values`, shared by every use of the same values. */
  ints(values: readonly number[]): string {
    const key = values.join(',');
    let name = this.intConstants.get(key);
    if (name === undefined) {
      name = this.int64s(`ints_${key.replace(/-/g, 'm').replace(/,/g, '_') || 'empty'}`, [values.length], values);
      this.intConstants.set(key, name);
    }
    return name;
  }

  /** A float32 tensor of zeros with dimensions `dims` (an Expand of a scalar, so no large initializer). */
  zeros(dims: readonly number[]): string {
    return this.op('Expand', [this.scalar(0), this.ints(dims)], 'zeros');
  }

  /** `value` (of dimensions `from`) reshaped to `to`; no node when they are equal. */
  reshape(value: string, from: readonly number[], to: readonly number[], base: string): string {
    if (from.length === to.length && from.every((d, i) => d === to[i])) return value;
    return this.op('Reshape', [value, this.ints(to)], base);
  }

  /**
   * `gradient` (of dimensions `from`, a broadcast result) summed down to dimensions `to`, the shape
   * of the operand it belongs to (numpy broadcasting rules).
   */
  reduceToShape(gradient: string, from: readonly number[], to: readonly number[], base: string): string {
    const offset = from.length - to.length;
    const axes = from.flatMap((d, i) => (i < offset || ((to[i - offset] as number) === 1 && d !== 1) ? [i] : []));
    const summed = axes.length > 0 ? this.op('ReduceSum', [gradient, this.ints(axes)], `${base}/sum`, { keepdims: { i: 1 } }) : gradient;
    const summedDims = from.map((d, i) => (axes.includes(i) ? 1 : d));
    return this.reshape(summed, summedDims, to, base);
  }
}
