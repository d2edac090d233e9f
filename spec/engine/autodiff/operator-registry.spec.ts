/**
 * The operator registry (lib/engine/autodiff/rules/registry.ts): one entry per operator, each with a
 * shape function (lib/engine/graph/shapes.ts), the gradient rules in it and nowhere else. (Each rule's
 * gradient case: operator-gradients.spec.ts.)
 */
import { expect } from 'chai';
import { differentiableOperators, gradientRule, operatorEntry, OPERATORS } from '../../../lib/engine/autodiff/rules/registry.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import { hasShapeFunction, inferShapes } from '../../../lib/engine/graph/shapes.js';
import { encodeModel, node, tensorValueInfo } from '../../../lib/onnx/builder.js';

describe('autodiff: the operator registry', () => {
  it('every entry has a shape function', () => {
    expect(Object.keys(OPERATORS).filter((op) => !hasShapeFunction(op))).to.deep.equal([]);
  });

  it('the shapes of the index operators without gradients: ArgMax and ArgMin (axis, keepdims), Size', () => {
    const model = encodeModel({
      graphName: 'indices',
      inputs: [tensorValueInfo('x', 'float32', ['batch', 3, 4])],
      outputs: [tensorValueInfo('y', 'int64', ['batch', 4])],
      nodes: [node('ArgMax', ['x'], ['y'], { axis: { i: 1 }, keepdims: { i: 0 } }), node('ArgMin', ['x'], ['z'], { axis: { i: -1 } }), node('Size', ['x'], ['s'])],
    });
    const { shapes } = inferShapes(readOnnxGraph(model, 'indices'), new Map([['x', [2, 3, 4]]]), new Set());
    expect(['y', 'z', 's'].map((v) => shapes.get(v))).to.deep.equal([
      { type: 'int64', dims: [2, 4] },
      { type: 'int64', dims: [2, 3, 1] },
      { type: 'int64', dims: [] },
    ]);
  });

  it('gives the rules of the differentiable operators, none for the others, nothing for unknown ones', () => {
    expect(differentiableOperators()).to.have.length(51).and.to.include.members(['Conv', 'MaxPool', 'BatchNormalization', 'Gather', 'LpNormalization']);
    for (const op of differentiableOperators()) expect(gradientRule(op), op).to.have.property('backward');
    expect([gradientRule('Shape'), operatorEntry('Shape')?.gradient]).to.deep.equal([undefined, 'none']);
    expect([gradientRule('Elu'), operatorEntry('Elu'), operatorEntry('toString')]).to.deep.equal([undefined, undefined, undefined]);
    expect([operatorEntry('BatchNormalization')?.gradientOutputs, operatorEntry('MaxPool')?.gradientOutputs, operatorEntry('Split')?.gradientOutputs]).to.deep.equal([1, 1, undefined]);
  });
});
