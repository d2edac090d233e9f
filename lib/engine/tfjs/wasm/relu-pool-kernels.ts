/**
 * @file ReLU, ReLU's gradient and max pooling as WebAssembly SIMD kernels for the ort-cpu backend,
 * four float32 lanes per instruction and no data-dependent branches: the comparisons that made the
 * JavaScript loops slow (activations of random sign or order, a mispredicted branch about every
 * second element) become lane masks and `v128.bitselect`.
 *
 * Each computes exactly what tfjs's cpu kernels compute:
 * - `relu`: Math.max(0, x): x unless x is negative and not NaN, then +0 (so -0 gives +0; NaN stays),
 *   on the int32 bit patterns.
 * - `reluGrad`: dy · step(x): dy where x > 0; NaN where x is NaN; elsewhere dy · 0, a zero with dy's
 *   sign for finite dy and NaN for infinite or NaN dy (NaN payloads aside).
 * - `maxPool` (NHWC, any window, stride and padding; no dilation): per output element the first
 *   strictly greater value in row-major window order starting from -Infinity (so NaN and padding never
 *   win; an empty or all-NaN window gives -Infinity and position -1), and the flat input index of the
 *   winner, which MaxPoolGrad uses. Channels run four at a time, the remainder one at a time.
 *
 * {@link RELU_POOL_WAT} is the source, {@link RELU_POOL_WASM_BASE64} its assembly
 * (`npx tsx scripts/tools/assemble-wasm.ts`; spec/engine/tfjs/wasm-kernels.spec.ts checks that they agree).
 */
import { CHUNK_ELEMENTS, forEachChunk, lazyWasmInstance, roundUpToLanes } from './wasm-instance.js';

/** WebAssembly text of the kernels (see the file comment). */
export const RELU_POOL_WAT = `(module
  (memory (export "memory") 1)
  ;; x, out: byte offsets of n int32 lanes (float32 bit patterns); n a multiple of 4
  (func (export "relu") (param $x i32) (param $out i32) (param $n i32)
    (local $off i32) (local $end i32) (local $b v128)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $off) (local.get $end)))
        (local.set $b (v128.load (i32.add (local.get $x) (local.get $off))))
        ;; clear where negative (sign set) and not NaN (magnitude - 0x7f800001 < 0)
        (v128.store (i32.add (local.get $out) (local.get $off))
          (v128.andnot (local.get $b)
            (v128.and
              (i32x4.shr_s (local.get $b) (i32.const 31))
              (i32x4.shr_s
                (i32x4.sub (v128.and (local.get $b) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
                           (v128.const i32x4 0x7f800001 0x7f800001 0x7f800001 0x7f800001))
                (i32.const 31)))))
        (local.set $off (i32.add (local.get $off) (i32.const 16)))
        (br $next))))
  ;; dy, x, out: byte offsets of n lanes; n a multiple of 4
  (func (export "reluGrad") (param $dy i32) (param $x i32) (param $out i32) (param $n i32)
    (local $off i32) (local $end i32) (local $b v128) (local $g v128) (local $gt v128) (local $nanX v128) (local $finiteDy v128)
    (local $mag v128) (local $nan v128)
    (local.set $mag (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))
    (local.set $nan (v128.const i32x4 0x7fc00000 0x7fc00000 0x7fc00000 0x7fc00000))
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $off) (local.get $end)))
        (local.set $b (v128.load (i32.add (local.get $x) (local.get $off))))
        (local.set $g (v128.load (i32.add (local.get $dy) (local.get $off))))
        ;; x > 0: sign clear and the int32 pattern above 0
        (local.set $gt (v128.andnot (i32x4.shr_s (i32x4.sub (v128.const i32x4 0 0 0 0) (local.get $b)) (i32.const 31))
                                    (i32x4.shr_s (local.get $b) (i32.const 31))))
        ;; x is NaN: magnitude above 0x7f800000
        (local.set $nanX (v128.not (i32x4.shr_s (i32x4.sub (v128.and (local.get $b) (local.get $mag))
                                                              (v128.const i32x4 0x7f800001 0x7f800001 0x7f800001 0x7f800001))
                                                 (i32.const 31))))
        ;; dy is finite: magnitude below 0x7f800000
        (local.set $finiteDy (i32x4.shr_s (i32x4.sub (v128.and (local.get $g) (local.get $mag))
                                                      (v128.const i32x4 0x7f800000 0x7f800000 0x7f800000 0x7f800000))
                                         (i32.const 31)))
        (v128.store (i32.add (local.get $out) (local.get $off))
          (v128.bitselect
            (local.get $nan)
            (v128.bitselect
              (local.get $g)
              ;; dy * 0: dy's sign for finite dy, else NaN
              (v128.bitselect (v128.andnot (local.get $g) (local.get $mag)) (local.get $nan) (local.get $finiteDy))
              (local.get $gt))
            (local.get $nanX)))
        (local.set $off (i32.add (local.get $off) (i32.const 16)))
        (br $next))))
  ;; Max pooling, NHWC. x: byte offset of the input; out, pos: byte offsets of the outputs (float32
  ;; maxima, int32 flat input indices plus base). Window of fH x fW at strides sH, sW, padding top/left.
  (func (export "maxPool")
    (param $x i32) (param $out i32) (param $pos i32) (param $base i32)
    (param $batch i32) (param $inH i32) (param $inW i32) (param $C i32)
    (param $outH i32) (param $outW i32) (param $sH i32) (param $sW i32)
    (param $fH i32) (param $fW i32) (param $top i32) (param $left i32)
    (local $b i32) (local $yR i32) (local $yC i32) (local $d i32) (local $r i32) (local $c i32)
    (local $rMin i32) (local $rMax i32) (local $cMin i32) (local $cMax i32)
    (local $o i32) (local $k i32) (local $t i32) (local $C4 i32)
    (local $best v128) (local $where v128) (local $v v128) (local $gt v128)
    (local $sBest f32) (local $sWhere i32) (local $sV f32) (local $sGt i32)
    (local.set $C4 (i32.and (local.get $C) (i32.const -4)))
    (block $bDone (loop $bLoop
      (br_if $bDone (i32.ge_u (local.get $b) (local.get $batch)))
      (local.set $yR (i32.const 0))
      (block $yRDone (loop $yRLoop
        (br_if $yRDone (i32.ge_u (local.get $yR) (local.get $outH)))
        ;; rows max(0, t) .. min(inH, t + fH), t = yR * sH - top
        (local.set $t (i32.sub (i32.mul (local.get $yR) (local.get $sH)) (local.get $top)))
        (local.set $rMin (select (local.get $t) (i32.const 0) (i32.gt_s (local.get $t) (i32.const 0))))
        (local.set $rMax (i32.add (local.get $t) (local.get $fH)))
        (local.set $rMax (select (local.get $rMax) (local.get $inH) (i32.lt_s (local.get $rMax) (local.get $inH))))
        (local.set $yC (i32.const 0))
        (block $yCDone (loop $yCLoop
          (br_if $yCDone (i32.ge_u (local.get $yC) (local.get $outW)))
          (local.set $t (i32.sub (i32.mul (local.get $yC) (local.get $sW)) (local.get $left)))
          (local.set $cMin (select (local.get $t) (i32.const 0) (i32.gt_s (local.get $t) (i32.const 0))))
          (local.set $cMax (i32.add (local.get $t) (local.get $fW)))
          (local.set $cMax (select (local.get $cMax) (local.get $inW) (i32.lt_s (local.get $cMax) (local.get $inW))))
          ;; four channels at a time
          (local.set $d (i32.const 0))
          (block $dDone (loop $dLoop
            (br_if $dDone (i32.ge_u (local.get $d) (local.get $C4)))
            (local.set $best (v128.const f32x4 -inf -inf -inf -inf))
            (local.set $where (v128.const i32x4 -1 -1 -1 -1))
            (local.set $r (local.get $rMin))
            (block $rDone (loop $rLoop
              (br_if $rDone (i32.ge_s (local.get $r) (local.get $rMax)))
              (local.set $c (local.get $cMin))
              (block $cDone (loop $cLoop
                (br_if $cDone (i32.ge_s (local.get $c) (local.get $cMax)))
                ;; k = ((b * inH + r) * inW + c) * C + d
                (local.set $k (i32.add (i32.mul (i32.add (i32.mul (i32.add (i32.mul (local.get $b) (local.get $inH)) (local.get $r))
                                                                   (local.get $inW))
                                                         (local.get $c))
                                                (local.get $C))
                                       (local.get $d)))
                (local.set $v (v128.load (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2)))))
                (local.set $gt (f32x4.gt (local.get $v) (local.get $best)))
                (local.set $best (v128.bitselect (local.get $v) (local.get $best) (local.get $gt)))
                (local.set $where (v128.bitselect (i32x4.add (i32x4.splat (i32.add (local.get $k) (local.get $base))) (v128.const i32x4 0 1 2 3))
                                                  (local.get $where) (local.get $gt)))
                (local.set $c (i32.add (local.get $c) (i32.const 1)))
                (br $cLoop)))
              (local.set $r (i32.add (local.get $r) (i32.const 1)))
              (br $rLoop)))
            (v128.store (i32.add (local.get $out) (i32.shl (local.get $o) (i32.const 2))) (local.get $best))
            (v128.store (i32.add (local.get $pos) (i32.shl (local.get $o) (i32.const 2))) (local.get $where))
            (local.set $o (i32.add (local.get $o) (i32.const 4)))
            (local.set $d (i32.add (local.get $d) (i32.const 4)))
            (br $dLoop)))
          ;; the remaining channels one at a time
          (block $sDone (loop $sLoop
            (br_if $sDone (i32.ge_u (local.get $d) (local.get $C)))
            (local.set $sBest (f32.const -inf))
            (local.set $sWhere (i32.const -1))
            (local.set $r (local.get $rMin))
            (block $srDone (loop $srLoop
              (br_if $srDone (i32.ge_s (local.get $r) (local.get $rMax)))
              (local.set $c (local.get $cMin))
              (block $scDone (loop $scLoop
                (br_if $scDone (i32.ge_s (local.get $c) (local.get $cMax)))
                (local.set $k (i32.add (i32.mul (i32.add (i32.mul (i32.add (i32.mul (local.get $b) (local.get $inH)) (local.get $r))
                                                                   (local.get $inW))
                                                         (local.get $c))
                                                (local.get $C))
                                       (local.get $d)))
                (local.set $sV (f32.load (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2)))))
                (local.set $sGt (f32.gt (local.get $sV) (local.get $sBest)))
                (local.set $sBest (select (local.get $sV) (local.get $sBest) (local.get $sGt)))
                (local.set $sWhere (select (i32.add (local.get $k) (local.get $base)) (local.get $sWhere) (local.get $sGt)))
                (local.set $c (i32.add (local.get $c) (i32.const 1)))
                (br $scLoop)))
              (local.set $r (i32.add (local.get $r) (i32.const 1)))
              (br $srLoop)))
            (f32.store (i32.add (local.get $out) (i32.shl (local.get $o) (i32.const 2))) (local.get $sBest))
            (i32.store (i32.add (local.get $pos) (i32.shl (local.get $o) (i32.const 2))) (local.get $sWhere))
            (local.set $o (i32.add (local.get $o) (i32.const 1)))
            (local.set $d (i32.add (local.get $d) (i32.const 1)))
            (br $sLoop)))
          (local.set $yC (i32.add (local.get $yC) (i32.const 1)))
          (br $yCLoop)))
        (local.set $yR (i32.add (local.get $yR) (i32.const 1)))
        (br $yRLoop)))
      (local.set $b (i32.add (local.get $b) (i32.const 1)))
      (br $bLoop))))
)
`;

/** {@link RELU_POOL_WAT} assembled (base64 of the .wasm bytes). */
export const RELU_POOL_WASM_BASE64 = 'AGFzbQEAAAABIQNgA39/fwBgBH9/f38AYBB/f39/f39/f39/f39/f39/AAMEAwABAgUDAQABByYEBm1lbW9yeQIABHJlbHUAAAhyZWx1R3JhZAABB21heFBvb2wAAgrCBwN0AgJ/AXsgAkECdCEEAkADQCADIARPDQEgACADav0ABAAhBSABIANqIAUgBUEf/awBIAX9DP///3////9/////f////3/9Tv0MAQCAfwEAgH8BAIB/AQCAf/2xAUEf/awB/U79T/0LBAAgA0EQaiEDDAALCwvvAQICfwd7/Qz///9/////f////3////9/IQv9DAAAwH8AAMB/AADAfwAAwH8hDCADQQJ0IQUCQANAIAQgBU8NASABIARq/QAEACEGIAAgBGr9AAQAIQf9DAAAAAAAAAAAAAAAAAAAAAAgBv2xAUEf/awBIAZBH/2sAf1PIQggBiAL/U79DAEAgH8BAIB/AQCAfwEAgH/9sQFBH/2sAf1NIQkgByAL/U79DAAAgH8AAIB/AACAfwAAgH/9sQFBH/2sASEKIAIgBGogDCAHIAcgC/1PIAwgCv1SIAj9UiAJ/VL9CwQAIARBEGohBAwACwsL2QQGDn8EewF9AX8BfQF/IAdBfHEhHQJAA0AgECAETw0BQQAhEQJAA0AgESAITw0BIBEgCmwgDmshHCAcQQAgHEEAShshFiAcIAxqIRcgFyAFIBcgBUgbIRdBACESAkADQCASIAlPDQEgEiALbCAPayEcIBxBACAcQQBKGyEYIBwgDWohGSAZIAYgGSAGSBshGUEAIRMCQANAIBMgHU8NAf0MAACA/wAAgP8AAID/AACA/yEe/Qz/////////////////////IR8gFiEUAkADQCAUIBdODQEgGCEVAkADQCAVIBlODQEgECAFbCAUaiAGbCAVaiAHbCATaiEbIAAgG0ECdGr9AAQAISAgICAe/UQhISAgIB4gIf1SIR4gGyADav0R/QwAAAAAAQAAAAIAAAADAAAA/a4BIB8gIf1SIR8gFUEBaiEVDAALCyAUQQFqIRQMAAsLIAEgGkECdGogHv0LBAAgAiAaQQJ0aiAf/QsEACAaQQRqIRogE0EEaiETDAALCwJAA0AgEyAHTw0BQwAAgP8hIkF/ISMgFiEUAkADQCAUIBdODQEgGCEVAkADQCAVIBlODQEgECAFbCAUaiAGbCAVaiAHbCATaiEbIAAgG0ECdGoqAgAhJCAkICJeISUgJCAiICUbISIgGyADaiAjICUbISMgFUEBaiEVDAALCyAUQQFqIRQMAAsLIAEgGkECdGogIjgCACACIBpBAnRqICM2AgAgGkEBaiEaIBNBAWohEwwACwsgEkEBaiESDAALCyARQQFqIREMAAsLIBBBAWohEAwACwsL';

interface ReluPoolExports {
  relu(x: number, out: number, n: number): void;
  reluGrad(dy: number, x: number, out: number, n: number): void;
  maxPool(
    x: number,
    out: number,
    pos: number,
    base: number,
    batch: number,
    inH: number,
    inW: number,
    channels: number,
    outH: number,
    outW: number,
    strideH: number,
    strideW: number,
    filterH: number,
    filterW: number,
    top: number,
    left: number,
  ): void;
}

/** The module's one instance, created on first use. */
const kernels = lazyWasmInstance<ReluPoolExports>(RELU_POOL_WASM_BASE64);

/** out[i] = relu(x[i]) (tfjs's Math.max(0, x), see the file comment); `chunkElements` values per kernel call. */
export function reluInto(x: Float32Array, out: Float32Array, chunkElements = CHUNK_ELEMENTS): void {
  forEachChunk(x.length, chunkElements, (start, end) => {
    const n = roundUpToLanes(end - start);
    const heap = new Float32Array(kernels().reserve(8 * n), 0, 2 * n);
    heap.set(x.subarray(start, end), 0);
    kernels().exports.relu(0, 4 * n, n);
    out.set(heap.subarray(n, n + end - start), start);
  });
}

/** out[i] = dy[i] · step(x[i]) (see the file comment); `chunkElements` values per kernel call. */
export function reluGradInto(dy: Float32Array, x: Float32Array, out: Float32Array, chunkElements = CHUNK_ELEMENTS): void {
  forEachChunk(x.length, chunkElements, (start, end) => {
    const n = roundUpToLanes(end - start);
    const heap = new Float32Array(kernels().reserve(12 * n), 0, 3 * n);
    heap.set(dy.subarray(start, end), 0);
    heap.set(x.subarray(start, end), n);
    kernels().exports.reluGrad(0, 4 * n, 8 * n, n);
    out.set(heap.subarray(2 * n, 2 * n + end - start), start);
  });
}

/** Geometry of one max pooling (tfjs's Conv2DInfo fields it needs; filter sizes are the effective ones). */
export interface MaxPoolGeometry {
  batchSize: number;
  inHeight: number;
  inWidth: number;
  channels: number;
  outHeight: number;
  outWidth: number;
  strideHeight: number;
  strideWidth: number;
  filterHeight: number;
  filterWidth: number;
  padTop: number;
  padLeft: number;
}

/**
 * Max pooling of NHWC `x`: writes the maxima into `out` (when given) and returns each output
 * element's flat input index of its maximum, or -1 (see the file comment). Whole images of at most
 * `chunkElements` input values (at least one image) per kernel call.
 */
export function maxPoolPositions(x: Float32Array, g: MaxPoolGeometry, out: Float32Array | null, chunkElements = CHUNK_ELEMENTS): Int32Array {
  const imageInputs = g.inHeight * g.inWidth * g.channels;
  const imageOutputs = g.outHeight * g.outWidth * g.channels;
  const positions = new Int32Array(g.batchSize * imageOutputs);
  // Whole images per call, so that windows never cross a chunk.
  forEachChunk(g.batchSize, Math.max(1, Math.floor(chunkElements / Math.max(1, imageInputs))), (first, end) => {
    const images = end - first;
    const inputs = images * imageInputs;
    const outputs = images * imageOutputs;
    const buffer = kernels().reserve(4 * (inputs + 2 * outputs));
    new Float32Array(buffer, 0, inputs).set(x.subarray(first * imageInputs, end * imageInputs));
    const outAt = 4 * inputs;
    const posAt = outAt + 4 * outputs;
    kernels().exports.maxPool(0, outAt, posAt, first * imageInputs, images, g.inHeight, g.inWidth, g.channels, g.outHeight, g.outWidth, g.strideHeight, g.strideWidth, g.filterHeight, g.filterWidth, g.padTop, g.padLeft);
    if (out) out.set(new Float32Array(buffer, outAt, outputs), first * imageOutputs);
    positions.set(new Int32Array(buffer, posAt, outputs), first * imageOutputs);
  });
  return positions;
}
