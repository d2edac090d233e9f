/**
 * What normalising a batch of uint8 crops costs on the CPU, in JavaScript (image/to-tensor.ts, what
 * `dml eval` does) against an ONNX graph in front of the model (issue 40 item 4: uint8 in, the
 * normalisation inside the model) run by onnxruntime's CPU provider:
 *
 *   npx tsx scripts/experiments/normalisation-graph-cost.ts [--batch 32] [--size 224] [--rounds 9]
 *
 * Two graphs from HWC uint8 [N, H, W, 3] to NCHW float32 with ImageNet's mean and std: `affine`
 * (Cast, Mul by 1/(255 std), Add -mean/std, Transpose: within float rounding of toTensor) and `table`
 * (Cast to int64, Add the channel's offset, Gather from toTensor's own 768-value table, Transpose:
 * exactly toTensor's values). Each ends in a ReduceMax per image, so that the timed runs return a few
 * numbers, not the tensor (inside a model nothing would be copied out either). Prints the median CPU
 * milliseconds per image of this process over `--rounds` batches, for 1 and 2 intra-op threads (no
 * spinning, as the embedder opens its sessions), and each graph's largest difference from toTensor.
 */
import ort from '../../lib/onnx/ort.js';
import { encodeModel, floatTensor, int64Tensor, node, tensorValueInfo, type NodeProto, type TensorProto, type ValueInfoProto } from '../../lib/onnx/builder.js';
import { normalizationTable, toTensor } from '../../lib/image/to-tensor.js';

function argument(flag: string, fallback: number): number {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const batch = argument('--batch', 32);
const size = argument('--size', 224);
const rounds = argument('--rounds', 9);
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const UINT8 = 2; // ONNX TensorProto.DataType.UINT8 (builder.ts's tensorValueInfo writes float32 and int64 only)

const pixelsInput: ValueInfoProto = {
  name: 'pixels',
  type: { tensorType: { elemType: UINT8, shape: { dim: [{ dimParam: 'N' }, { dimValue: size }, { dimValue: size }, { dimValue: 3 }] } } },
};

/** A model from `pixels` through `front` (ending in `hwc`, float32 HWC) to NCHW `out` and its per-image maximum `small`. */
function graph(name: string, front: NodeProto[], initializers: TensorProto[]): Uint8Array {
  return encodeModel({
    graphName: name,
    inputs: [pixelsInput],
    outputs: [tensorValueInfo('out', 'float32', ['N', 3, size, size]), tensorValueInfo('small', 'float32', ['N'])],
    nodes: [...front, node('Transpose', ['hwc'], ['out'], { perm: { ints: [0, 3, 1, 2] } }), node('ReduceMax', ['out'], ['small'], { axes: { ints: [1, 2, 3] }, keepdims: { i: 0 } })],
    initializers,
    opsetImports: [{ domain: '', version: 13 }],
  });
}

const table = normalizationTable({ mean: MEAN, std: STD }, 3);
const models: Record<string, Uint8Array> = {
  affine: graph(
    'affine',
    [node('Cast', ['pixels'], ['f'], { to: { i: 1 } }), node('Mul', ['f', 'scale'], ['scaled']), node('Add', ['scaled', 'shift'], ['hwc'])],
    [floatTensor('scale', [3], STD.map((s) => 1 / (255 * s))), floatTensor('shift', [3], MEAN.map((m, c) => -m / (STD[c] as number)))],
  ),
  table: graph(
    'table',
    [node('Cast', ['pixels'], ['i'], { to: { i: 7 } }), node('Add', ['i', 'offsets'], ['index']), node('Gather', ['table', 'index'], ['hwc'], { axis: { i: 0 } })],
    [floatTensor('table', [768], table), int64Tensor('offsets', [3], [0, 256, 512])],
  ),
};

const per = size * size * 3;
const pixels = new Uint8Array(batch * per);
for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 7919) & 255;
const reference = new Float32Array(batch * per);
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

const js: number[] = [];
for (let r = 0; r < rounds; r++) {
  const start = cpuMs();
  for (let i = 0; i < batch; i++) {
    toTensor({ data: Buffer.from(pixels.buffer, i * per, per), width: size, height: size, channels: 3 }, { mean: MEAN, std: STD, layout: 'NCHW' }, reference, i * per);
  }
  js.push((cpuMs() - start) / batch);
}
console.log(`batch ${batch} of ${size}x${size}x3, median of ${rounds} batches, CPU ms per image`);
console.log(`  toTensor (JavaScript, into a reused array): ${median(js).toFixed(3)}`);
for (const [name, bytes] of Object.entries(models)) {
  for (const threads of [1, 2]) {
    const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: threads, extra: { session: { 'intra_op.allow_spinning': '0' } } });
    const feeds = { pixels: new ort.Tensor('uint8', pixels, [batch, size, size, 3]) };
    const out = (await session.run(feeds, ['out']))['out']?.data as Float32Array;
    let largest = 0;
    for (let i = 0; i < out.length; i++) largest = Math.max(largest, Math.abs((out[i] as number) - (reference[i] as number)));
    const times: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const start = cpuMs();
      await session.run(feeds, ['small']);
      times.push((cpuMs() - start) / batch);
    }
    console.log(`  ${name} graph, ${threads} intra-op thread(s): ${median(times).toFixed(3)} (largest difference from toTensor ${largest.toExponential(2)})`);
    await session.release();
  }
}
