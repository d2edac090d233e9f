/**
 * Every gradient rule of the graph trainer (lib/engine/autodiff/rules/registry.ts), one operator at a
 * time, against PyTorch in float64: spec/fixtures/operator-gradients/cases.json, written by
 * scripts/reference/torch_operator_gradients.py, holds per case one ONNX node with trained inputs, a
 * seed gradient G of its output, PyTorch's output, its autograd gradient of sum(output * G) for each
 * trained input and, away from kinks and ties, the central finite differences of that loss. Each case
 * runs as a one-node model through the graph trainer (its training-mode forward, its backward).
 *
 * The suite fails for a registered rule without a case, for a case of an operator without a rule, and
 * for an operator with kinks or ties without a case at them (PyTorch's convention there).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { differentiableOperators } from '../../../lib/engine/autodiff/rules/registry.js';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { boolTensor, encodeModel, floatTensor, int64Tensor, node, tensorValueInfo, type AttributeValue, type TensorProto } from '../../../lib/onnx/builder.js';
import { relativeError } from '../../helpers/relative-error.js';

interface CaseInput {
  name: string;
  type?: 'float32' | 'int64' | 'bool';
  dims?: number[];
  values?: (number | boolean)[];
  trained?: boolean;
}

interface OperatorCase {
  name: string;
  op: string;
  attributes: Record<string, AttributeValue>;
  inputs: CaseInput[];
  /** The node's output count, and the one that is the model's output. */
  outputs: number;
  output: number;
  outputDims: number[];
  kink: boolean;
  seed: number[];
  expectedOutput: number[];
  gradients: Record<string, number[]>;
  finiteDifferences?: Record<string, number[]>;
}

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/operator-gradients/cases.json', import.meta.url), 'utf8')) as { torch: string; opset: number; cases: OperatorCase[] };

/** Operators whose gradient has kinks or ties, where PyTorch's convention decides it: each needs a case there. */
const WITH_KINKS_OR_TIES = ['Relu', 'LeakyRelu', 'Clip', 'Max', 'Min', 'HardSigmoid', 'HardSwish', 'MaxPool', 'GlobalMaxPool', 'ReduceMax', 'ReduceMin'];

function tensorOf(input: CaseInput): TensorProto {
  const dims = input.dims ?? [];
  const values = input.values ?? [];
  if (input.type === 'int64') return int64Tensor(input.name, dims, values as number[]);
  if (input.type === 'bool') return boolTensor(input.name, dims, values as boolean[]);
  return floatTensor(input.name, dims, values as number[]);
}

/**
 * The case's node as a model: each trained input a computed value, `<name> = Add(<name>/value, 0)`,
 * as in a network (an operator on an initializer alone would be a constant: an Identity of one is
 * an alias, constant-initializers.ts), whose gradient is that of `<name>/value`; the constant inputs
 * initializers; an unused data input (the graph trainer needs one); the model's output `y`.
 */
function modelOf(c: OperatorCase): Uint8Array {
  const outputs = Array.from({ length: c.outputs }, (_, k) => (k === c.output ? 'y' : `unused_${k}`));
  const trained = c.inputs.filter((i) => i.trained);
  return encodeModel({
    graphName: c.op,
    inputs: [tensorValueInfo('input', 'float32', ['batch', 1])],
    outputs: [tensorValueInfo('y', 'float32', c.outputDims)],
    nodes: [...trained.map((i) => node('Add', [`${i.name}/value`, 'zero'], [i.name])), node(c.op, c.inputs.map((i) => i.name), outputs, c.attributes)],
    initializers: [floatTensor('zero', [], [0]), ...c.inputs.filter((i) => i.name !== '').map((i) => tensorOf(i.trained ? { ...i, name: `${i.name}/value` } : i))],
    opsetImports: [{ domain: '', version: fixture.opset }],
  });
}

describe(`autodiff: every operator's gradient rule against PyTorch ${fixture.torch} in float64`, function () {
  this.timeout(30_000);

  it('every registered rule has a case, every case a rule, and every operator with kinks or ties a case at them', () => {
    const covered = new Set(fixture.cases.map((c) => c.op));
    const rules = differentiableOperators();
    expect(rules.filter((op) => !covered.has(op)), 'rules without a case').to.deep.equal([]);
    expect([...covered].filter((op) => !rules.includes(op)), 'cases without a rule').to.deep.equal([]);
    const kinked = new Set(fixture.cases.filter((c) => c.kink).map((c) => c.op));
    expect(WITH_KINKS_OR_TIES.filter((op) => !kinked.has(op)), 'operators without a case at their kinks or ties').to.deep.equal([]);
  });

  for (const c of fixture.cases) {
    it(`${c.op}: ${c.name}`, async () => {
      const trained = c.inputs.filter((i) => i.trained).map((i) => `${i.name}/value`);
      const trainer = await GraphTrainer.create({ model: modelOf(c), name: c.name, itemDims: [1], optimizer: { kind: 'sgd' }, trained, recordGradients: true, threads: 1 });
      try {
        const input = Float32Array.of(0);
        expect(relativeError(await trainer.forward(input), c.expectedOutput), 'output').to.be.below(1e-5);
        await trainer.step(input, Float32Array.from(c.seed), 0);
        for (const { name } of c.inputs.filter((i) => i.trained)) {
          const gradient = trainer.gradient(`${name}/value`) as Float32Array;
          expect(gradient, name).to.not.equal(undefined);
          expect(relativeError(gradient, c.gradients[name] as number[]), `d/d${name} against autograd`).to.be.below(2e-5);
          if (c.finiteDifferences) expect(relativeError(gradient, c.finiteDifferences[name] as number[]), `d/d${name} against finite differences`).to.be.below(2e-5);
        }
      } finally {
        await trainer.release();
      }
    });
  }
});
