/**
 * @file bfloat16 and float16 models: onnxruntime-node cannot open bfloat16 inputs or outputs, so the
 * embedder runs them with the casts inside the graph (onnx/bfloat16-io.ts); float16 inputs are cast by
 * the session runner. Both give the float32 model's embedding of the same (rounded) input.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import onnxProto from 'onnx-proto';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { encodeModel, floatTensor, node, type ValueInfoProto } from '../../lib/onnx/builder.js';
import { widenBfloat16Io } from '../../lib/onnx/bfloat16-io.js';
import { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfToFloat } from '../../lib/util/half-float.js';
import { Rng } from '../../lib/util/rng.js';
import { makeTempDir } from '../image/image-fixtures.js';

const { onnx } = onnxProto;
const BF16 = onnx.TensorProto.DataType.BFLOAT16;
const F16 = onnx.TensorProto.DataType.FLOAT16;

function value(name: string, elemType: number, dims: Array<number | string>): ValueInfoProto {
  return { name, type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } } } };
}

const weights = (() => {
  const rng = new Rng(4);
  return Float32Array.from({ length: 12 * 4 }, () => rng.nextGaussian());
})();

/** x [batch, 3, 2, 2] of `type` -> Cast(float) -> Flatten -> MatMul W [12, 4] -> Cast(type) -> y [batch, 4] of `type`. */
function castModel(type: number): Uint8Array {
  return encodeModel({
    graphName: 'half',
    inputs: [value('x', type, ['batch', 3, 2, 2])],
    outputs: [value('y', type, ['batch', 4])],
    initializers: [floatTensor('w', [12, 4], weights)],
    nodes: [
      node('Cast', ['x'], ['xf'], { to: { i: 1 } }),
      node('Flatten', ['xf'], ['flat'], { axis: { i: 1 } }),
      node('MatMul', ['flat', 'w'], ['yf']),
      node('Cast', ['yf'], ['y'], { to: { i: type } }),
    ],
    metadata: { 'dml.preprocessing': JSON.stringify({ height: 2, width: 2, resizeShorter: 2, channels: 3, layout: 'NCHW', mean: [0, 0, 0], std: [1, 1, 1] }) },
  });
}

/** The model's embedding of `input` computed here, with the input and output rounded by `round`. */
function expected(input: Float32Array, round: (v: number) => number): number[] {
  const x = Array.from(input, round);
  const y = Array.from({ length: 4 }, (_, j) => round(x.reduce((s, v, i) => s + v * (weights[i * 4 + j] as number), 0)));
  const norm = Math.hypot(...y);
  return y.map((v) => v / norm);
}

describe('onnx/bfloat16-io and float16 models', () => {
  let dir: string;
  beforeEach(() => {
    dir = makeTempDir('dml-half-');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const input = Float32Array.from({ length: 12 }, (_, i) => (i - 5.3) / 3.7);

  it('rounds half and bfloat16 to nearest even, and widens exactly', () => {
    expect(floatToHalf(1)).to.equal(0x3c00);
    expect(floatToHalf(65520)).to.equal(0x7c00);
    expect(floatToHalf(2 ** -25)).to.equal(0);
    expect(floatToHalf(2 ** -24)).to.equal(1);
    expect(halfToFloat(floatToHalf(0.1))).to.equal(0.0999755859375);
    expect(floatToBfloat16(1)).to.equal(0x3f80);
    expect(bfloat16ToFloat(floatToBfloat16(0.1))).to.equal(0.10009765625);
    expect(floatToBfloat16(1 + 2 ** -8)).to.equal(0x3f80); // a tie goes to even
    expect(Number.isNaN(bfloat16ToFloat(floatToBfloat16(Number.NaN)))).to.equal(true);
  });

  it('a bfloat16 model runs with the casts moved into the graph', async () => {
    const file = path.join(dir, 'bf16.onnx');
    writeFileSync(file, castModel(BF16));
    expect(widenBfloat16Io(castModel(1), 'f32')).to.equal(undefined);
    const embedder = await OnnxEmbedder.open(file, { device: 'cpu' });
    try {
      // The report records the types the file declares, not those of the widened graph.
      expect(embedder.ioTypes).to.deep.equal({ input: 'bfloat16', output: 'bfloat16' });
      const got = Array.from(await embedder.embedTensor(input, 1));
      const round = (v: number): number => bfloat16ToFloat(floatToBfloat16(v));
      expected(input, round).forEach((v, j) => expect(got[j]).to.be.closeTo(v, 1e-6));
    } finally {
      await embedder.release();
    }
  });

  it('a float16 model gets its inputs cast to float16 and its outputs widened', async () => {
    const file = path.join(dir, 'fp16.onnx');
    writeFileSync(file, castModel(F16));
    const embedder = await OnnxEmbedder.open(file, { device: 'cpu' });
    try {
      expect(embedder.signature.inputType).to.equal('float16');
      expect(embedder.ioTypes).to.deep.equal({ input: 'float16', output: 'float16' });
      const got = Array.from(await embedder.embedTensor(input, 1));
      const round = (v: number): number => halfToFloat(floatToHalf(v));
      expected(input, round).forEach((v, j) => expect(got[j]).to.be.closeTo(v, 1e-6));
    } finally {
      await embedder.release();
    }
  });
});
