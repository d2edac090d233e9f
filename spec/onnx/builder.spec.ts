/**
 * @file Tests of the ONNX builder: a Gemm + Relu + LpNormalization head built with it runs in
 * onnxruntime and matches a JavaScript reference; attributes keep their declared types; int64
 * initializers (negative values included) are read correctly; bad arguments are named.
 */
import { expect } from 'chai';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import {
  encodeModel,
  floatTensor,
  int64Tensor,
  node,
  ONNX_IR_VERSION,
  ONNX_OPSET_VERSION,
  ONNX_PRODUCER_NAME,
  tensorValueInfo,
  type AttributeValue,
} from '../../lib/onnx/builder.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

const { onnx } = onnxProto;

const IN = 6;
const OUT = 4;

function randomArray(rng: Rng, n: number): Float32Array {
  return Float32Array.from({ length: n }, () => rng.nextGaussian());
}

/** y = L2-normalise(relu(alpha * x W^T + beta * b)) with a symbolic batch axis. */
function headModel(weights: Float32Array, bias: Float32Array, alpha: AttributeValue, beta: AttributeValue): Uint8Array {
  return encodeModel({
    graphName: 'head',
    inputs: [tensorValueInfo('x', 'float32', ['batch', IN])],
    outputs: [tensorValueInfo('y', 'float32', ['batch', OUT])],
    initializers: [floatTensor('W', [OUT, IN], weights), floatTensor('b', [OUT], bias)],
    valueInfo: [tensorValueInfo('h', 'float32', ['batch', OUT]), tensorValueInfo('r', 'float32', ['batch', OUT])],
    nodes: [
      node('Gemm', ['x', 'W', 'b'], ['h'], { alpha, beta, transB: { i: 1 } }),
      node('Relu', ['h'], ['r']),
      node('LpNormalization', ['r'], ['y'], { axis: { i: -1 }, p: { i: 2 } }),
    ],
    metadata: { 'dml.embedding_dim': String(OUT), note: 'builder spec' },
    producerVersion: '0.1.0',
  });
}

function referenceHead(x: Float32Array, batch: number, weights: Float32Array, bias: Float32Array, alpha: number, beta: number): Float64Array {
  const y = new Float64Array(batch * OUT);
  for (let n = 0; n < batch; n++) {
    let norm = 0;
    for (let o = 0; o < OUT; o++) {
      let sum = 0;
      for (let i = 0; i < IN; i++) sum += (x[n * IN + i] as number) * (weights[o * IN + i] as number);
      const v = Math.max(0, alpha * sum + beta * (bias[o] as number));
      y[n * OUT + o] = v;
      norm += v * v;
    }
    for (let o = 0; o < OUT; o++) y[n * OUT + o] = (y[n * OUT + o] as number) / Math.sqrt(norm);
  }
  return y;
}

async function runHead(bytes: Uint8Array, x: Float32Array, batch: number): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    const out = await session.run({ x: new ort.Tensor('float32', x, [batch, IN]) });
    expect(out.y?.dims).to.deep.equal([batch, OUT]);
    return out.y?.data as Float32Array;
  } finally {
    await session.release();
  }
}

function expectThrowsArg(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(DmlError);
    expect((err as DmlError).code).to.equal('E_ARG');
    expect((err as DmlError).message).to.match(pattern);
    return;
  }
  expect.fail('expected an E_ARG DmlError');
}

describe('onnx/builder', () => {
  before(() => {
    ort.env.logLevel = 'fatal';
  });

  it('builds a Gemm+Relu+LpNormalization head that onnxruntime runs at two batch sizes, matching JS to 1e-6', async () => {
    const rng = new Rng(11);
    // Positive bias keeps every row's Relu output non-zero, so normalisation is well defined.
    const weights = randomArray(rng, OUT * IN);
    const bias = Float32Array.from({ length: OUT }, () => 3 + rng.next());
    const bytes = headModel(weights, bias, { f: 1.0 }, { f: 1.0 });
    for (const batch of [5, 2]) {
      const x = randomArray(rng, batch * IN);
      const y = await runHead(bytes, x, batch);
      const reference = referenceHead(x, batch, weights, bias, 1, 1);
      y.forEach((v, i) => expect(Math.abs(v - (reference[i] as number))).to.be.below(1e-6));
      for (let n = 0; n < batch; n++) {
        let norm = 0;
        for (let o = 0; o < OUT; o++) norm += (y[n * OUT + o] as number) ** 2;
        expect(Math.abs(Math.sqrt(norm) - 1)).to.be.below(1e-6);
      }
    }
  });

  it('declares the symbolic batch axis, IR and opset versions, producer and metadata props', async () => {
    const bytes = headModel(new Float32Array(OUT * IN), new Float32Array(OUT), { f: 1 }, { f: 1 });
    const decoded = onnx.ModelProto.decode(bytes);
    expect(Number(decoded.irVersion)).to.equal(ONNX_IR_VERSION).and.to.equal(8);
    expect(decoded.opsetImport.map((o) => [o.domain, Number(o.version)])).to.deep.equal([['', ONNX_OPSET_VERSION]]);
    expect(ONNX_OPSET_VERSION).to.equal(17);
    expect(decoded.producerName).to.equal(ONNX_PRODUCER_NAME).and.to.equal('dmlkit');
    expect(decoded.producerVersion).to.equal('0.1.0');
    expect(decoded.metadataProps.map((p) => [p.key, p.value])).to.deep.equal([
      ['dml.embedding_dim', '4'],
      ['note', 'builder spec'],
    ]);
    const session = await ort.InferenceSession.create(bytes);
    expect(session.inputMetadata).to.deep.equal([{ name: 'x', isTensor: true, type: 'float32', shape: ['batch', IN] }]);
    await session.release();
  });

  it('writes attributes with the declared type: { f: 1.0 } is FLOAT (accepted), { i: 1 } for alpha is INT (rejected)', async () => {
    const weights = new Float32Array(OUT * IN).fill(0.5);
    const bias = new Float32Array(OUT).fill(1);
    const good = onnx.ModelProto.decode(headModel(weights, bias, { f: 1.0 }, { f: 1.0 }));
    const gemm = good.graph?.node?.[0];
    const attributes = Object.fromEntries((gemm?.attribute ?? []).map((a) => [a.name, a]));
    expect(attributes.alpha?.type).to.equal(onnx.AttributeProto.AttributeType.FLOAT);
    expect(attributes.alpha?.f).to.equal(1);
    expect(attributes.transB?.type).to.equal(onnx.AttributeProto.AttributeType.INT);
    expect(Number(attributes.transB?.i)).to.equal(1);

    let rejected: unknown;
    try {
      await ort.InferenceSession.create(headModel(weights, bias, { i: 1 }, { f: 1.0 }));
    } catch (err) {
      rejected = err;
    }
    expect(String(rejected)).to.match(/alpha/);
  });

  it('applies a non-unit float alpha (0.25) like the reference', async () => {
    const rng = new Rng(12);
    const weights = randomArray(rng, OUT * IN);
    const bias = Float32Array.from({ length: OUT }, () => 1 + rng.next());
    const x = randomArray(rng, 3 * IN);
    const y = await runHead(headModel(weights, bias, { f: 0.25 }, { f: 1 }), x, 3);
    const reference = referenceHead(x, 3, weights, bias, 0.25, 1);
    y.forEach((v, i) => expect(Math.abs(v - (reference[i] as number))).to.be.below(1e-6));
  });

  it('stores int64 initializers (negative values included) as raw little-endian data that Reshape reads', async () => {
    const shape = int64Tensor('shape', [2], [-1, 2]);
    expect(Array.from(new BigInt64Array(shape.rawData?.slice().buffer as ArrayBuffer))).to.deep.equal([-1n, 2n]);
    const bytes = encodeModel({
      graphName: 'reshape',
      inputs: [tensorValueInfo('x', 'float32', [1, 6])],
      outputs: [tensorValueInfo('y', 'float32', [3, 2])],
      initializers: [shape],
      nodes: [node('Reshape', ['x', 'shape'], ['y'])],
    });
    const session = await ort.InferenceSession.create(bytes);
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6]), [1, 6]) });
    expect(out.y?.dims).to.deep.equal([3, 2]);
    expect(Array.from(out.y?.data as Float32Array)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    await session.release();
  });

  it('writes float list, int list and string attributes', () => {
    const n = node('Custom', ['a'], ['b'], { fs: { floats: [0.5, 2] }, is: { ints: [1, -3] }, s: { s: 'é' }, ss: { strings: ['x', 'y'] } });
    const [fs, is, s, ss] = n.attribute ?? [];
    const T = onnx.AttributeProto.AttributeType;
    expect([fs?.type, is?.type, s?.type, ss?.type]).to.deep.equal([T.FLOATS, T.INTS, T.STRING, T.STRINGS]);
    expect(fs?.floats).to.deep.equal([0.5, 2]);
    expect(is?.ints).to.deep.equal([1, -3]);
    expect(new TextDecoder().decode(s?.s ?? new Uint8Array())).to.equal('é');
    expect(n.name).to.equal('b');
  });

  it('names the parameter, expectation and value of bad arguments', () => {
    expectThrowsArg(() => node('Gemm', ['a'], ['b'], { transB: { i: 1.5 } }), /^Expected a safe integer for attribute transB of Gemm but received 1.5$/);
    expectThrowsArg(() => node('X', ['a'], ['b'], { bad: {} as AttributeValue }), /for attribute bad of X/);
    expectThrowsArg(() => floatTensor('W', [2, 3], new Float32Array(5)), /^Expected 6 elements for dims \[2, 3\] for values of W but received 5$/);
    expectThrowsArg(() => floatTensor('W', [-1], new Float32Array(0)), /for dims of W but received -1/);
    expectThrowsArg(() => int64Tensor('k', [1], [0.5]), /^Expected a safe integer for values\[0\] of k but received 0.5$/);
    expectThrowsArg(() => tensorValueInfo('x', 'float32', [1.5]), /for dims of x but received 1.5/);
    expectThrowsArg(() => tensorValueInfo('x', 'float16' as 'float32', [1]), /for elementType of x but received "float16"/);
  });
});
