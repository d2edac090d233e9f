/**
 * @file Every constant tensor of an ONNX graph as an initializer under its own name: the tensors of
 * `Constant` nodes, and the aliases PyTorch's exporter writes for initializers with equal values.
 *
 * `torch.onnx.export` of a model in eval mode stores initializers with equal values once and names
 * the others through `Identity` nodes (`_jit_pass_onnx_deduplicate_initializers`). In a freshly
 * initialised network every BatchNorm's weight and running variance are ones and every bias and
 * running mean zeros, so in such a file `features.1.1.weight`, `features.0.1.running_var`, ... are all
 * `Identity` outputs of `features.0.1.weight`. They are separate tensors that happen to start equal:
 * the graph trainer trains each on its own, and a file it writes back must hold each under its own
 * name, or every aliased layer would read another layer's trained values. {@link withConstantInitializers}
 * gives the graph in that form; lib/engine/graph/onnx-ir.ts reads every graph through it, and the graph
 * trainer writes its checkpoints and exports from it.
 */
import { DmlError } from '../../errors.js';
import type { GraphProto, NodeProto, TensorProto } from '../../onnx/builder.js';

/** A graph with its constants as initializers (see the file comment). */
export interface ConstantInitializers {
  /** The graph: each `Constant` node with a tensor `value` and each `Identity` of a constant tensor replaced by an initializer holding a copy of the tensor under the node's output name. */
  readonly graph: GraphProto;
  /** The outputs of the `Identity` nodes replaced (the aliases): tensors that were stored once for several names. */
  readonly aliases: readonly string[];
}

/** The tensor attribute `value` of a Constant node, or undefined (a Constant given by value_float, value_ints, ...). */
function constantValue(node: NodeProto): TensorProto | undefined {
  return (node.attribute ?? []).find((a) => a.name === 'value' && a.t)?.t ?? undefined;
}

/**
 * `graph` with every constant tensor as an initializer of its own: a `Constant` node with a tensor
 * `value`, and an `Identity` node whose input is a constant tensor (an initializer, a Constant's
 * output or another such alias), become initializers named by the node's output: tensor messages of
 * their own, whose bytes are shared with the source's until one of them is replaced (as the graph
 * trainer replaces trained tensors). Every other node and initializer is kept as it is, in order.
 * `where` names the model in errors: a node whose output is already an initializer's name is E_MODEL.
 */
export function withConstantInitializers(graph: GraphProto, where: string): ConstantInitializers {
  const tensors = new Map<string, TensorProto>();
  for (const t of graph.initializer ?? []) tensors.set(t.name ?? '', t);
  const added: TensorProto[] = [];
  const aliases: string[] = [];
  const nodes: NodeProto[] = [];
  for (const n of graph.node ?? []) {
    const output = n.output?.length === 1 ? n.output[0] : undefined;
    const source = n.opType === 'Constant' ? constantValue(n) : n.opType === 'Identity' && n.input?.length === 1 ? tensors.get(n.input[0] ?? '') : undefined;
    if (!output || !source || (n.domain && n.domain !== 'ai.onnx')) {
      nodes.push(n);
      continue;
    }
    if (tensors.has(output)) throw new DmlError('E_MODEL', `${where}: node ${n.name || n.opType} writes ${output}, which is also an initializer's name`);
    const own: TensorProto = { ...source, name: output };
    tensors.set(output, own);
    added.push(own);
    if (n.opType === 'Identity') aliases.push(output);
  }
  return { graph: { ...graph, node: nodes, initializer: [...(graph.initializer ?? []), ...added] }, aliases };
}
