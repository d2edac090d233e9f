/**
 * @file What one convolution of Recipe R's network costs in onnxruntime on the CPU, ONNX's Conv against
 * the blocked kernels the graph trainer writes (lib/engine/autodiff/rules/blocked-convolution.ts):
 *
 * - forward: Conv of x [N, c, h, h] by w [c, c, 3, 3] (pads 1), and ReorderInput -> blocked Conv ->
 *   ReorderOutput with the same weights already in the blocked filter layout;
 * - weight gradient as a convolution: xᵀ [c, N, h, h] (blocked, the images as channels) by dYᵀ
 *   [c, N, h, h] as the kernel, its padding given as the Conv's pads or written out beforehand (the
 *   input already padded), the operands already reordered.
 *
 *   npx tsx scripts/experiments/blocked-conv-cost.ts [--batch 128] [--threads 2] [--runs 12]
 *
 * Medians of `--runs` runs after two, wall time of `session.run` (the output's copy to JavaScript
 * included, the same for both forms); inputs seeded.
 */
import { encodeModel, floatTensor, node, tensorValueInfo, type NodeProto } from '../../lib/onnx/builder.js';
import { NCHWC_DOMAIN, NCHWC_OPSET_IMPORTS, nchwcBlockSize } from '../../lib/onnx/nchwc.js';
import ort from '../../lib/onnx/ort.js';
import { Rng } from '../../lib/util/rng.js';

function argument(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
const blockedNode = (...args: Parameters<typeof node>): NodeProto => ({ ...node(...args), domain: NCHWC_DOMAIN });

const batch = Number(argument('--batch', '128'));
const threads = Number(argument('--threads', '2'));
const runs = Number(argument('--runs', '12'));

function seeded(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => rng.nextGaussian());
}

/** Median ms of running `nodes` (one output `y`) on `inputs`. */
async function time(nodes: NodeProto[], inputs: Record<string, number[]>, initializers = [floatTensor('unused', [1], [0])]): Promise<number> {
  const model = encodeModel({
    graphName: 'blocked_conv_cost',
    inputs: Object.entries(inputs).map(([name, dims]) => tensorValueInfo(name, 'float32', dims)),
    outputs: [tensorValueInfo('y', 'float32', ['a', 'b', 'c', 'd'])],
    nodes,
    initializers,
    opsetImports: NCHWC_OPSET_IMPORTS,
  });
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'extended', intraOpNumThreads: threads, logSeverityLevel: 3 });
  const feeds = Object.fromEntries(Object.entries(inputs).map(([name, dims], i) => [name, new ort.Tensor('float32', seeded(dims.reduce((a, b) => a * b, 1), i + 1), dims)]));
  const times: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const start = performance.now();
    await session.run(feeds);
    if (i >= 2) times.push(performance.now() - start);
  }
  await session.release();
  return median(times);
}

async function main(): Promise<void> {
  const block = await nchwcBlockSize();
  if (block === undefined) throw new Error('onnxruntime has no blocked convolution kernels on this processor');
  console.log(`batch ${batch}, ${threads} threads, block ${block}, median ms of ${runs} runs`);
  console.log('| layer | Conv | blocked, with reorders | weight gradient: Conv pads | padding written out |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const [c, h] of [[32, 32], [64, 16], [128, 8]] as const) {
    const conv = { kernel_shape: { ints: [3, 3] }, pads: { ints: [1, 1, 1, 1] } };
    const plain = await time([node('Conv', ['x', 'w'], ['y'], conv)], { x: [batch, c, h, h], w: [c, c, 3, 3] });
    const blocked = await time(
      [blockedNode('ReorderInput', ['x'], ['xb']), blockedNode('Conv', ['xb', 'w'], ['yb'], conv), blockedNode('ReorderOutput', ['yb'], ['y'], { channels: { i: c } })],
      { x: [batch, c, h, h], w: [c, c, 3, 3] },
    );
    const kernel = { kernel_shape: { ints: [h, h] } };
    const gradientPads = await time([blockedNode('Conv', ['xt', 'dy'], ['y'], { ...kernel, pads: { ints: [1, 1, 1, 1] } })], { xt: [c, batch, h, h], dy: [c, batch, h, h] });
    const gradientPadded = await time([blockedNode('Conv', ['xt', 'dy'], ['y'], kernel)], { xt: [c, batch, h + 2, h + 2], dy: [c, batch, h, h] });
    console.log(`| ${h}x${h}x${c} | ${plain.toFixed(1)} | ${blocked.toFixed(1)} | ${gradientPads.toFixed(1)} | ${gradientPadded.toFixed(1)} |`);
  }
}

await main();
