/**
 * @file Fast paths for the element-wise kernels that profiling (`tf.profile` of a training step on
 * the `cpu` backend) shows time in: the binary Add, Sub, Multiply, RealDiv and SquaredDifference, and
 * the unary Relu, Step (ReLU's gradient) and Square, on float32 tensors; and the fused ReLU gradient
 * of ops/relu-gradient.ts (dy · step(x) in one pass). Relu and the fused gradient run as WebAssembly
 * SIMD kernels (wasm/relu-pool-kernels.ts).
 *
 * tfjs's cpu kernels compute every element through a generic closure, and broadcast through index
 * arithmetic per element (`[128, 512] / [128, 1]` took 10-20 ms). Large outputs of Add, Sub,
 * Multiply, RealDiv and Square (batch-normalisation and ReLU gradients over whole activation maps) go to
 * onnxruntime's operator of the same arithmetic, which runs on every core. The rest run one loop per
 * operator, each written out so the engine inlines the arithmetic, covering equal shapes, a
 * scalar on either side, a "row" ([.., n] against [n]) or "column" ([m, ..] against [m, 1, ..])
 * operand on either side, and a "middle" one ([n, h, w, c] against [n, 1, 1, c]) as one row loop per
 * leading index. Anything else (other dtypes, general broadcasting of small outputs) goes to tfjs's
 * cpu kernel of the same name. Every path computes exactly what the cpu kernel computes: the same
 * float32 operation per element.
 */
import * as tf from '@tensorflow/tfjs';
import type { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { RELU_GRAD_KERNEL } from '../ops/relu-gradient.js';
import { reluGradInto, reluInto } from '../wasm/relu-pool-kernels.js';
import { cpuKernel } from './cpu-fallback.js';
import { float32Values } from './float32-values.js';
import { uninitialisedFloat32Array } from './output-arrays.js';
import { binaryModel } from './op-models.js';
import type { OrtSyncRuntime } from './ort-sync-runtime.js';
import type { KernelArgs } from './kernel-args.js';


/**
 * How `b` (shape `bShape`) broadcasts against `a` to the output: `same`, `scalar`, `row` (b repeats
 * every `inner` elements: trailing dims equal, leading dims 1), `column` (each b element repeats
 * `inner` times: leading dims equal, trailing dims 1) or `middle` (leading and trailing dims equal,
 * dims 1 between them, as a [n, 1, 1, c] operand against [n, h, w, c]: b's block of `inner` elements
 * at the same leading index repeats `repeat` times); null for anything else.
 */
export type BroadcastPattern =
  | { kind: 'same' }
  | { kind: 'scalar' }
  | { kind: 'row'; inner: number }
  | { kind: 'column'; inner: number }
  | { kind: 'middle'; repeat: number; inner: number };

/** The pattern of `small` broadcast against `big` (`big` has the output shape), or null. */
export function broadcastPattern(big: readonly number[], small: readonly number[]): BroadcastPattern | null {
  const size = (s: readonly number[]): number => s.reduce((p, d) => p * d, 1);
  if (size(small) === 1) return { kind: 'scalar' };
  if (small.length > big.length) return null;
  const padded = [...Array<number>(big.length - small.length).fill(1), ...small];
  if (padded.some((d, i) => d !== big[i] && d !== 1)) return null;
  if (padded.every((d, i) => d === big[i])) return { kind: 'same' };
  // Each axis where big's size is not 1 is either equal ('e') or broadcast ('1'); axes of size 1 in
  // both are neither. The layout must read e* 1+ e*.
  const kinds = big.map((d, i) => (d === 1 ? '' : padded[i] === d ? 'e' : '1')).join('');
  const match = /^(e*)(1+)(e*)$/.exec(kinds);
  if (!match) return null;
  const firstOne = padded.findIndex((d, i) => d === 1 && big[i] !== 1);
  let lastOne = padded.length - 1;
  while (!(padded[lastOne] === 1 && big[lastOne] !== 1)) lastOne--;
  const inner = size(big.slice(lastOne + 1));
  const repeat = size(big.slice(firstOne, lastOne + 1));
  if ((match[1] as string).length === 0) return { kind: 'row', inner };
  if ((match[3] as string).length === 0) return { kind: 'column', inner: repeat };
  return { kind: 'middle', repeat, inner };
}

/** The patterns the loops handle directly; `middle` runs the `row` loop once per leading index. */
type LoopPattern = Exclude<BroadcastPattern, { kind: 'middle' }>;

/** out[i] = op(a[i], b[j(i)]) for one broadcast pattern; `swap` evaluates op(b, a) instead. */
type Loop = (a: Float32Array, b: Float32Array, out: Float32Array, pattern: LoopPattern, swap: boolean) => void;

/** Runs `loop` for any pattern, splitting a `middle` pattern into one `row` pass per leading index. */
function runLoop(loop: Loop, a: Float32Array, b: Float32Array, out: Float32Array, pattern: BroadcastPattern, swap: boolean): void {
  if (pattern.kind !== 'middle') {
    loop(a, b, out, pattern, swap);
    return;
  }
  const chunk = pattern.repeat * pattern.inner;
  const row: LoopPattern = { kind: 'row', inner: pattern.inner };
  for (let o = 0, start = 0; start < out.length; o++, start += chunk) {
    loop(a.subarray(start, start + chunk), b.subarray(o * pattern.inner, (o + 1) * pattern.inner), out.subarray(start, start + chunk), row, swap);
  }
}

/** One loop per operator, each its own function literal so that it is optimised with its arithmetic inlined. */
const LOOPS: Readonly<Record<string, Loop>> = {
  Add: (a, b, out, p) => {
    const n = out.length;
    if (p.kind === 'same') for (let i = 0; i < n; i++) out[i] = (a[i] as number) + (b[i] as number);
    else if (p.kind === 'scalar') {
      const s = b[0] as number;
      for (let i = 0; i < n; i++) out[i] = (a[i] as number) + s;
    } else if (p.kind === 'row') {
      const w = p.inner;
      for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) + (b[j] as number);
    } else {
      const w = p.inner;
      for (let r = 0, i = 0; i < n; r++, i += w) {
        const s = b[r] as number;
        for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) + s;
      }
    }
  },
  Sub: (a, b, out, p, swap) => {
    const n = out.length;
    const k = swap ? -1 : 1;
    // a - b, or b - a when swapped: k * (a - b) is exact in float32 (negation is exact).
    if (p.kind === 'same') for (let i = 0; i < n; i++) out[i] = k * ((a[i] as number) - (b[i] as number));
    else if (p.kind === 'scalar') {
      const s = b[0] as number;
      for (let i = 0; i < n; i++) out[i] = k * ((a[i] as number) - s);
    } else if (p.kind === 'row') {
      const w = p.inner;
      for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = k * ((a[i + j] as number) - (b[j] as number));
    } else {
      const w = p.inner;
      for (let r = 0, i = 0; i < n; r++, i += w) {
        const s = b[r] as number;
        for (let j = 0; j < w; j++) out[i + j] = k * ((a[i + j] as number) - s);
      }
    }
  },
  Multiply: (a, b, out, p) => {
    const n = out.length;
    if (p.kind === 'same') for (let i = 0; i < n; i++) out[i] = (a[i] as number) * (b[i] as number);
    else if (p.kind === 'scalar') {
      const s = b[0] as number;
      for (let i = 0; i < n; i++) out[i] = (a[i] as number) * s;
    } else if (p.kind === 'row') {
      const w = p.inner;
      for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) * (b[j] as number);
    } else {
      const w = p.inner;
      for (let r = 0, i = 0; i < n; r++, i += w) {
        const s = b[r] as number;
        for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) * s;
      }
    }
  },
  RealDiv: (a, b, out, p, swap) => {
    const n = out.length;
    if (p.kind === 'same') {
      if (swap) for (let i = 0; i < n; i++) out[i] = (b[i] as number) / (a[i] as number);
      else for (let i = 0; i < n; i++) out[i] = (a[i] as number) / (b[i] as number);
    } else if (p.kind === 'scalar') {
      const s = b[0] as number;
      if (swap) for (let i = 0; i < n; i++) out[i] = s / (a[i] as number);
      else for (let i = 0; i < n; i++) out[i] = (a[i] as number) / s;
    } else if (p.kind === 'row') {
      const w = p.inner;
      if (swap) for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = (b[j] as number) / (a[i + j] as number);
      else for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) / (b[j] as number);
    } else {
      const w = p.inner;
      for (let r = 0, i = 0; i < n; r++, i += w) {
        const s = b[r] as number;
        if (swap) for (let j = 0; j < w; j++) out[i + j] = s / (a[i + j] as number);
        else for (let j = 0; j < w; j++) out[i + j] = (a[i + j] as number) / s;
      }
    }
  },
  SquaredDifference: (a, b, out, p) => {
    const n = out.length;
    const sq = (d: number): number => d * d;
    if (p.kind === 'same') for (let i = 0; i < n; i++) out[i] = sq((a[i] as number) - (b[i] as number));
    else if (p.kind === 'scalar') {
      const s = b[0] as number;
      for (let i = 0; i < n; i++) out[i] = sq((a[i] as number) - s);
    } else if (p.kind === 'row') {
      const w = p.inner;
      for (let i = 0; i < n; i += w) for (let j = 0; j < w; j++) out[i + j] = sq((a[i + j] as number) - (b[j] as number));
    } else {
      const w = p.inner;
      for (let r = 0, i = 0; i < n; r++, i += w) {
        const s = b[r] as number;
        for (let j = 0; j < w; j++) out[i + j] = sq((a[i + j] as number) - s);
      }
    }
  },
};

/**
 * Outputs of at least this many elements are computed by onnxruntime (Add, Sub, Mul, Div, Square),
 * whose vectorised loops run on every core: measured over [128, 28, 28, 32], 3-5 ms against 8-15 ms
 * for the loops here. Smaller ones stay here: below a few hundred thousand elements a session run
 * (and waking onnxruntime's threads) costs about what the loop does.
 */
export const ORT_ELEMENTWISE_MIN_SIZE = 1 << 18;

/** The ONNX operator computing each tfjs binary kernel with the same float32 rounding, where one does. */
const ONNX_BINARY: Readonly<Record<string, 'Add' | 'Sub' | 'Mul' | 'Div'>> = { Add: 'Add', Sub: 'Sub', Multiply: 'Mul', RealDiv: 'Div' };

function runtimeOf(backend: MathBackendCPU): OrtSyncRuntime | undefined {
  return (backend as MathBackendCPU & { runtime?: OrtSyncRuntime }).runtime;
}

/**
 * The kernel of `name`: onnxruntime's operator for large float32 outputs (any numpy broadcast), the
 * fast loop when the shapes fit a pattern, else tfjs's cpu kernel. A single float32 addition,
 * subtraction, multiplication or division rounds the same in onnxruntime (IEEE single precision) as
 * in JavaScript (double precision, then rounded to float32: exact for these four operations), so
 * all three give identical results.
 */
function binaryKernel(name: string, loop: Loop): tf.KernelFunc {
  const onnxOp = ONNX_BINARY[name];
  return (args: KernelArgs) => {
    const backend = args.backend as MathBackendCPU;
    const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    if (a.dtype === 'float32' && b.dtype === 'float32') {
      const outShape = tf.backend_util.assertAndGetBroadcastShape(a.shape, b.shape);
      const size = tf.util.sizeFromShape(outShape);
      const aValues = float32Values(backend, a);
      const bValues = float32Values(backend, b);
      const runtime = runtimeOf(backend);
      if (onnxOp && runtime && size >= ORT_ELEMENTWISE_MIN_SIZE) {
        const session = runtime.session(`${onnxOp}|${a.shape.join('x')}|${b.shape.join('x')}`, () => binaryModel(onnxOp, a.shape, b.shape, outShape));
        const [y] = session.run({ a: { data: aValues, dims: a.shape }, b: { data: bValues, dims: b.shape } }, [outShape]);
        return backend.makeTensorInfo(outShape, 'float32', (y as { data: Float32Array }).data);
      }
      const aIsOut = tf.util.arraysEqual(a.shape, outShape);
      const bIsOut = tf.util.arraysEqual(b.shape, outShape);
      const pattern = aIsOut ? broadcastPattern(outShape, b.shape) : bIsOut ? broadcastPattern(outShape, a.shape) : null;
      if (pattern) {
        const out = uninitialisedFloat32Array(size);
        if (aIsOut) runLoop(loop, aValues, bValues, out, pattern, false);
        else runLoop(loop, bValues, aValues, out, pattern, true);
        return backend.makeTensorInfo(outShape, 'float32', out);
      }
    }
    return cpuKernel(name, args);
  };
}

/** The float32 bit pattern of `v` as an int32. */
function float32Bits(v: number): number {
  return new Int32Array(Float32Array.of(v).buffer)[0] as number;
}

const ONE_BITS = float32Bits(1);
const NAN_BITS = float32Bits(Number.NaN);

/**
 * Step (tfjs's cpu semantics: NaN for NaN, 1 above 0, else alpha) on the float32 bit patterns with
 * integer masks instead of comparisons, since a comparison of activations (half of them negative, in
 * no order) compiles to a branch that the CPU mispredicts about half the time (over 3.2 million
 * random-sign values, `Math.max(0, x)` took 25 ms, a masked loop 5-9 ms): `gt` (x > 0: int32 bits > 0,
 * which +Infinity is and -0 is not) picks 1 over alpha, then `nan` (magnitude bits above 0x7f800000)
 * picks NaN over both. Relu and its gradient run as WebAssembly SIMD kernels (wasm/relu-pool-kernels.ts).
 */
const UNARY_LOOPS: Readonly<Record<string, (x: Int32Array, out: Int32Array, attrs: tf.NamedAttrMap) => void>> = {
  Step: (x, out, attrs) => {
    const alpha = float32Bits(attrs['alpha'] as number);
    for (let i = 0; i < x.length; i++) {
      const b = x[i] as number;
      const gt = ~(b >> 31) & ((0 - b) >> 31);
      const nan = ~(((b & 0x7fffffff) - 0x7f800001) >> 31);
      out[i] = (nan & NAN_BITS) | (~nan & ((gt & ONE_BITS) | (~gt & alpha)));
    }
  },
};

function unaryKernel(name: string, loop: (x: Int32Array, out: Int32Array, attrs: tf.NamedAttrMap) => void): tf.KernelFunc {
  return (args: KernelArgs) => {
    const backend = args.backend as MathBackendCPU;
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype !== 'float32') return cpuKernel(name, args);
    const values = float32Values(backend, x);
    const out = uninitialisedFloat32Array(values.length);
    loop(new Int32Array(values.buffer, values.byteOffset, values.length), new Int32Array(out.buffer, out.byteOffset, out.length), args.attrs ?? {});
    return backend.makeTensorInfo([...x.shape], 'float32', out);
  };
}

/**
 * Square (tfjs's cpu kernel: x * x per element): onnxruntime's Mul of x by itself for large inputs
 * (one float32 multiplication, rounded as JavaScript's double product rounded to float32 is), a loop
 * here otherwise.
 */
function square(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x } = args.inputs as { x: tf.TensorInfo };
  if (x.dtype !== 'float32') return cpuKernel('Square', args);
  const values = float32Values(backend, x);
  const runtime = runtimeOf(backend);
  if (runtime && values.length >= ORT_ELEMENTWISE_MIN_SIZE) {
    const session = runtime.session(`Mul|${x.shape.join('x')}|${x.shape.join('x')}`, () => binaryModel('Mul', x.shape, x.shape, x.shape));
    const [y] = session.run({ a: { data: values, dims: x.shape }, b: { data: values, dims: x.shape } }, [x.shape]);
    return backend.makeTensorInfo([...x.shape], 'float32', (y as { data: Float32Array }).data);
  }
  const out = uninitialisedFloat32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    out[i] = v * v;
  }
  return backend.makeTensorInfo([...x.shape], 'float32', out);
}

/** Relu: Math.max(0, x) per element (the WebAssembly kernel's exact semantics: wasm/relu-pool-kernels.ts). */
function relu(args: KernelArgs): tf.TensorInfo | tf.TensorInfo[] {
  const backend = args.backend as MathBackendCPU;
  const { x } = args.inputs as { x: tf.TensorInfo };
  if (x.dtype !== 'float32') return cpuKernel('Relu', args);
  const values = float32Values(backend, x);
  const out = uninitialisedFloat32Array(values.length);
  reluInto(values, out);
  return backend.makeTensorInfo([...x.shape], 'float32', out);
}

/** The fused ReLU gradient dy · step(x) (ops/relu-gradient.ts), by the WebAssembly kernel. */
function reluGrad(args: KernelArgs): tf.TensorInfo {
  const backend = args.backend as MathBackendCPU;
  const { dy, x } = args.inputs as { dy?: tf.TensorInfo; x?: tf.TensorInfo };
  if (!dy || !x || dy.dtype !== 'float32' || x.dtype !== 'float32' || !tf.util.arraysEqual(dy.shape, x.shape)) {
    const describe = (t: tf.TensorInfo | undefined): string => (t ? `${t.dtype} [${t.shape.join(', ')}]` : 'none');
    throw new Error(`${RELU_GRAD_KERNEL}: expected float32 dy and x of one shape, got dy ${describe(dy)} and x ${describe(x)}`);
  }
  const xs = float32Values(backend, x);
  const out = uninitialisedFloat32Array(xs.length);
  reluGradInto(float32Values(backend, dy), xs, out);
  return backend.makeTensorInfo([...x.shape], 'float32', out);
}

/** The element-wise fast paths by tfjs kernel name. */
export const ELEMENTWISE_KERNELS: Readonly<Record<string, tf.KernelFunc>> = Object.fromEntries([
  ...Object.entries(LOOPS).map(([name, loop]) => [name, binaryKernel(name, loop)] as const),
  ...Object.entries(UNARY_LOOPS).map(([name, loop]) => [name, unaryKernel(name, loop)] as const),
  ['Square', square] as const,
  ['Relu', relu] as const,
  [RELU_GRAD_KERNEL, reluGrad] as const,
]);
