/**
 * @file The passes of the fused batch-normalisation training kernels (ort-cpu/batch-norm-kernels.ts,
 * formulas in ops/batch-norm-training.ts) as WebAssembly SIMD loops over [rows, channels] float32
 * data, channels last:
 * - `moments`: per channel the sums of d and d², d = x - shift (in double precision, two channels
 *   per f64x2 instruction);
 * - `gradSums`: per channel the sums of dy and dy · (x - mean), the same way;
 * - `affine`: y = (x - center) · scale + offset per channel, four channels per f32x4 instruction;
 * - `gradDx`: dx = dy · k1 + (x - center) · k2 + k3 per channel, likewise.
 * The sums walk the rows in blocks of `blockRows` (a block stays in the L1 cache while each pair of
 * channels is summed through it, the running sums in registers). Channels that do not fill a vector
 * run one at a time. x - center is formed before scaling, so activations far from zero keep their
 * precision.
 *
 * {@link BATCH_NORM_WAT} is the source, {@link BATCH_NORM_WASM_BASE64} its assembly
 * (`npx tsx scripts/tools/assemble-wasm.ts`; spec/engine/tfjs/wasm-kernels.spec.ts checks that they agree).
 */
import { CHUNK_ELEMENTS, forEachChunk, lazyWasmInstance } from './wasm-instance.js';

/** WebAssembly text of the passes (see the file comment). Offsets are in bytes. */
export const BATCH_NORM_WAT = `(module
  (memory (export "memory") 1)
  ;; sum[c] += Σ (x - shift[c]), sq[c] += Σ (x - shift[c])²; shift, sum, sq: float64 [C]
  (func (export "moments")
    (param $x i32) (param $rows i32) (param $C i32) (param $blockRows i32)
    (param $shift i32) (param $sum i32) (param $sq i32)
    (local $r0 i32) (local $rEnd i32) (local $r i32) (local $c i32) (local $C2 i32)
    (local $s v128) (local $q v128) (local $d v128) (local $center v128)
    (local $ss f64) (local $sq1 f64) (local $sd f64) (local $scenter f64)
    (local.set $C2 (i32.and (local.get $C) (i32.const -2)))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $r0) (local.get $rows)))
      (local.set $rEnd (i32.add (local.get $r0) (local.get $blockRows)))
      (local.set $rEnd (select (local.get $rEnd) (local.get $rows) (i32.lt_u (local.get $rEnd) (local.get $rows))))
      ;; two channels at a time
      (local.set $c (i32.const 0))
      (block $pairsDone (loop $pairs
        (br_if $pairsDone (i32.ge_u (local.get $c) (local.get $C2)))
        (local.set $center (v128.load (i32.add (local.get $shift) (i32.shl (local.get $c) (i32.const 3)))))
        (local.set $s (v128.const f64x2 0 0))
        (local.set $q (v128.const f64x2 0 0))
        (local.set $r (local.get $r0))
        (block $rowsDone (loop $rowsLoop
          (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rEnd)))
          (local.set $d (f64x2.sub
            (f64x2.promote_low_f32x4 (v128.load64_zero
              (i32.add (local.get $x) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $C)) (local.get $c)) (i32.const 2)))))
            (local.get $center)))
          (local.set $s (f64x2.add (local.get $s) (local.get $d)))
          (local.set $q (f64x2.add (local.get $q) (f64x2.mul (local.get $d) (local.get $d))))
          (local.set $r (i32.add (local.get $r) (i32.const 1)))
          (br $rowsLoop)))
        (v128.store (i32.add (local.get $sum) (i32.shl (local.get $c) (i32.const 3)))
          (f64x2.add (v128.load (i32.add (local.get $sum) (i32.shl (local.get $c) (i32.const 3)))) (local.get $s)))
        (v128.store (i32.add (local.get $sq) (i32.shl (local.get $c) (i32.const 3)))
          (f64x2.add (v128.load (i32.add (local.get $sq) (i32.shl (local.get $c) (i32.const 3)))) (local.get $q)))
        (local.set $c (i32.add (local.get $c) (i32.const 2)))
        (br $pairs)))
      ;; an odd last channel
      (if (i32.lt_u (local.get $c) (local.get $C))
        (then
          (local.set $scenter (f64.load (i32.add (local.get $shift) (i32.shl (local.get $c) (i32.const 3)))))
          (local.set $ss (f64.const 0))
          (local.set $sq1 (f64.const 0))
          (local.set $r (local.get $r0))
          (block $sRowsDone (loop $sRows
            (br_if $sRowsDone (i32.ge_u (local.get $r) (local.get $rEnd)))
            (local.set $sd (f64.sub
              (f64.promote_f32 (f32.load (i32.add (local.get $x) (i32.shl (i32.add (i32.mul (local.get $r) (local.get $C)) (local.get $c)) (i32.const 2)))))
              (local.get $scenter)))
            (local.set $ss (f64.add (local.get $ss) (local.get $sd)))
            (local.set $sq1 (f64.add (local.get $sq1) (f64.mul (local.get $sd) (local.get $sd))))
            (local.set $r (i32.add (local.get $r) (i32.const 1)))
            (br $sRows)))
          (f64.store (i32.add (local.get $sum) (i32.shl (local.get $c) (i32.const 3)))
            (f64.add (f64.load (i32.add (local.get $sum) (i32.shl (local.get $c) (i32.const 3)))) (local.get $ss)))
          (f64.store (i32.add (local.get $sq) (i32.shl (local.get $c) (i32.const 3)))
            (f64.add (f64.load (i32.add (local.get $sq) (i32.shl (local.get $c) (i32.const 3)))) (local.get $sq1)))))
      (local.set $r0 (local.get $rEnd))
      (br $blocks))))
  ;; sumDy[c] += Σ dy, sumDyC[c] += Σ dy · (x - mean[c]); mean, sumDy, sumDyC: float64 [C]
  (func (export "gradSums")
    (param $dy i32) (param $x i32) (param $rows i32) (param $C i32) (param $blockRows i32)
    (param $mean i32) (param $sumDy i32) (param $sumDyC i32)
    (local $r0 i32) (local $rEnd i32) (local $r i32) (local $c i32) (local $C2 i32) (local $off i32)
    (local $s v128) (local $q v128) (local $g v128) (local $center v128)
    (local $ss f64) (local $sq1 f64) (local $sg f64) (local $scenter f64)
    (local.set $C2 (i32.and (local.get $C) (i32.const -2)))
    (block $blocksDone (loop $blocks
      (br_if $blocksDone (i32.ge_u (local.get $r0) (local.get $rows)))
      (local.set $rEnd (i32.add (local.get $r0) (local.get $blockRows)))
      (local.set $rEnd (select (local.get $rEnd) (local.get $rows) (i32.lt_u (local.get $rEnd) (local.get $rows))))
      (local.set $c (i32.const 0))
      (block $pairsDone (loop $pairs
        (br_if $pairsDone (i32.ge_u (local.get $c) (local.get $C2)))
        (local.set $center (v128.load (i32.add (local.get $mean) (i32.shl (local.get $c) (i32.const 3)))))
        (local.set $s (v128.const f64x2 0 0))
        (local.set $q (v128.const f64x2 0 0))
        (local.set $r (local.get $r0))
        (block $rowsDone (loop $rowsLoop
          (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rEnd)))
          (local.set $off (i32.shl (i32.add (i32.mul (local.get $r) (local.get $C)) (local.get $c)) (i32.const 2)))
          (local.set $g (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $dy) (local.get $off)))))
          (local.set $s (f64x2.add (local.get $s) (local.get $g)))
          (local.set $q (f64x2.add (local.get $q)
            (f64x2.mul (local.get $g)
              (f64x2.sub (f64x2.promote_low_f32x4 (v128.load64_zero (i32.add (local.get $x) (local.get $off)))) (local.get $center)))))
          (local.set $r (i32.add (local.get $r) (i32.const 1)))
          (br $rowsLoop)))
        (v128.store (i32.add (local.get $sumDy) (i32.shl (local.get $c) (i32.const 3)))
          (f64x2.add (v128.load (i32.add (local.get $sumDy) (i32.shl (local.get $c) (i32.const 3)))) (local.get $s)))
        (v128.store (i32.add (local.get $sumDyC) (i32.shl (local.get $c) (i32.const 3)))
          (f64x2.add (v128.load (i32.add (local.get $sumDyC) (i32.shl (local.get $c) (i32.const 3)))) (local.get $q)))
        (local.set $c (i32.add (local.get $c) (i32.const 2)))
        (br $pairs)))
      (if (i32.lt_u (local.get $c) (local.get $C))
        (then
          (local.set $scenter (f64.load (i32.add (local.get $mean) (i32.shl (local.get $c) (i32.const 3)))))
          (local.set $ss (f64.const 0))
          (local.set $sq1 (f64.const 0))
          (local.set $r (local.get $r0))
          (block $sRowsDone (loop $sRows
            (br_if $sRowsDone (i32.ge_u (local.get $r) (local.get $rEnd)))
            (local.set $off (i32.shl (i32.add (i32.mul (local.get $r) (local.get $C)) (local.get $c)) (i32.const 2)))
            (local.set $sg (f64.promote_f32 (f32.load (i32.add (local.get $dy) (local.get $off)))))
            (local.set $ss (f64.add (local.get $ss) (local.get $sg)))
            (local.set $sq1 (f64.add (local.get $sq1)
              (f64.mul (local.get $sg) (f64.sub (f64.promote_f32 (f32.load (i32.add (local.get $x) (local.get $off)))) (local.get $scenter)))))
            (local.set $r (i32.add (local.get $r) (i32.const 1)))
            (br $sRows)))
          (f64.store (i32.add (local.get $sumDy) (i32.shl (local.get $c) (i32.const 3)))
            (f64.add (f64.load (i32.add (local.get $sumDy) (i32.shl (local.get $c) (i32.const 3)))) (local.get $ss)))
          (f64.store (i32.add (local.get $sumDyC) (i32.shl (local.get $c) (i32.const 3)))
            (f64.add (f64.load (i32.add (local.get $sumDyC) (i32.shl (local.get $c) (i32.const 3)))) (local.get $sq1)))))
      (local.set $r0 (local.get $rEnd))
      (br $blocks))))
  ;; y = (x - center[c]) * scale[c] + offset[c]; center, scale, offset: float32 [C]
  (func (export "affine")
    (param $x i32) (param $y i32) (param $rows i32) (param $C i32)
    (param $center i32) (param $scale i32) (param $offset i32)
    (local $r i32) (local $c i32) (local $C4 i32) (local $row i32) (local $at i32) (local $p i32)
    (local.set $C4 (i32.and (local.get $C) (i32.const -4)))
    (block $rowsDone (loop $rowsLoop
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $row (i32.shl (i32.mul (local.get $r) (local.get $C)) (i32.const 2)))
      (local.set $c (i32.const 0))
      (block $vDone (loop $v
        (br_if $vDone (i32.ge_u (local.get $c) (local.get $C4)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $p (i32.shl (local.get $c) (i32.const 2)))
        (v128.store (i32.add (local.get $y) (local.get $at))
          (f32x4.add
            (f32x4.mul
              (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $at))) (v128.load (i32.add (local.get $center) (local.get $p))))
              (v128.load (i32.add (local.get $scale) (local.get $p))))
            (v128.load (i32.add (local.get $offset) (local.get $p)))))
        (local.set $c (i32.add (local.get $c) (i32.const 4)))
        (br $v)))
      (block $sDone (loop $s
        (br_if $sDone (i32.ge_u (local.get $c) (local.get $C)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $p (i32.shl (local.get $c) (i32.const 2)))
        (f32.store (i32.add (local.get $y) (local.get $at))
          (f32.add
            (f32.mul
              (f32.sub (f32.load (i32.add (local.get $x) (local.get $at))) (f32.load (i32.add (local.get $center) (local.get $p))))
              (f32.load (i32.add (local.get $scale) (local.get $p))))
            (f32.load (i32.add (local.get $offset) (local.get $p)))))
        (local.set $c (i32.add (local.get $c) (i32.const 1)))
        (br $s)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rowsLoop))))
  ;; dx = dy * k1[c] + (x - center[c]) * k2[c] + k3[c]; center, k1, k2, k3: float32 [C]
  (func (export "gradDx")
    (param $dy i32) (param $x i32) (param $dx i32) (param $rows i32) (param $C i32)
    (param $center i32) (param $k1 i32) (param $k2 i32) (param $k3 i32)
    (local $r i32) (local $c i32) (local $C4 i32) (local $row i32) (local $at i32) (local $p i32)
    (local.set $C4 (i32.and (local.get $C) (i32.const -4)))
    (block $rowsDone (loop $rowsLoop
      (br_if $rowsDone (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $row (i32.shl (i32.mul (local.get $r) (local.get $C)) (i32.const 2)))
      (local.set $c (i32.const 0))
      (block $vDone (loop $v
        (br_if $vDone (i32.ge_u (local.get $c) (local.get $C4)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $p (i32.shl (local.get $c) (i32.const 2)))
        (v128.store (i32.add (local.get $dx) (local.get $at))
          (f32x4.add
            (f32x4.add
              (f32x4.mul (v128.load (i32.add (local.get $dy) (local.get $at))) (v128.load (i32.add (local.get $k1) (local.get $p))))
              (f32x4.mul
                (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $at))) (v128.load (i32.add (local.get $center) (local.get $p))))
                (v128.load (i32.add (local.get $k2) (local.get $p)))))
            (v128.load (i32.add (local.get $k3) (local.get $p)))))
        (local.set $c (i32.add (local.get $c) (i32.const 4)))
        (br $v)))
      (block $sDone (loop $s
        (br_if $sDone (i32.ge_u (local.get $c) (local.get $C)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $p (i32.shl (local.get $c) (i32.const 2)))
        (f32.store (i32.add (local.get $dx) (local.get $at))
          (f32.add
            (f32.add
              (f32.mul (f32.load (i32.add (local.get $dy) (local.get $at))) (f32.load (i32.add (local.get $k1) (local.get $p))))
              (f32.mul
                (f32.sub (f32.load (i32.add (local.get $x) (local.get $at))) (f32.load (i32.add (local.get $center) (local.get $p))))
                (f32.load (i32.add (local.get $k2) (local.get $p)))))
            (f32.load (i32.add (local.get $k3) (local.get $p)))))
        (local.set $c (i32.add (local.get $c) (i32.const 1)))
        (br $s)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rowsLoop))))
)
`;

/** {@link BATCH_NORM_WAT} assembled (base64 of the .wasm bytes). */
export const BATCH_NORM_WASM_BASE64 = 'AGFzbQEAAAABIgNgB39/f39/f38AYAh/f39/f39/fwBgCX9/f39/f39/fwADBQQAAQACBQMBAAEHMQUGbWVtb3J5AgAHbW9tZW50cwAACGdyYWRTdW1zAAEGYWZmaW5lAAIGZ3JhZER4AAMK2woEqgMDBX8EewR8IAJBfnEhCwJAA0AgByABTw0BIAcgA2ohCCAIIAEgCCABSRshCEEAIQoCQANAIAogC08NASAEIApBA3Rq/QAEACEP/QwAAAAAAAAAAAAAAAAAAAAAIQz9DAAAAAAAAAAAAAAAAAAAAAAhDSAHIQkCQANAIAkgCE8NASAAIAkgAmwgCmpBAnRq/V0DAP1fIA/98QEhDiAMIA798AEhDCANIA4gDv3yAf3wASENIAlBAWohCQwACwsgBSAKQQN0aiAFIApBA3Rq/QAEACAM/fAB/QsEACAGIApBA3RqIAYgCkEDdGr9AAQAIA398AH9CwQAIApBAmohCgwACwsgCiACSQRAIAQgCkEDdGorAwAhE0QAAAAAAAAAACEQRAAAAAAAAAAAIREgByEJAkADQCAJIAhPDQEgACAJIAJsIApqQQJ0aioCALsgE6EhEiAQIBKgIRAgESASIBKioCERIAlBAWohCQwACwsgBSAKQQN0aiAFIApBA3RqKwMAIBCgOQMAIAYgCkEDdGogBiAKQQN0aisDACARoDkDAAsgCCEHDAALCwvCAwMGfwR7BHwgA0F+cSEMAkADQCAIIAJPDQEgCCAEaiEJIAkgAiAJIAJJGyEJQQAhCwJAA0AgCyAMTw0BIAUgC0EDdGr9AAQAIRH9DAAAAAAAAAAAAAAAAAAAAAAhDv0MAAAAAAAAAAAAAAAAAAAAACEPIAghCgJAA0AgCiAJTw0BIAogA2wgC2pBAnQhDSAAIA1q/V0DAP1fIRAgDiAQ/fABIQ4gDyAQIAEgDWr9XQMA/V8gEf3xAf3yAf3wASEPIApBAWohCgwACwsgBiALQQN0aiAGIAtBA3Rq/QAEACAO/fAB/QsEACAHIAtBA3RqIAcgC0EDdGr9AAQAIA/98AH9CwQAIAtBAmohCwwACwsgCyADSQRAIAUgC0EDdGorAwAhFUQAAAAAAAAAACESRAAAAAAAAAAAIRMgCCEKAkADQCAKIAlPDQEgCiADbCALakECdCENIAAgDWoqAgC7IRQgEiAUoCESIBMgFCABIA1qKgIAuyAVoaKgIRMgCkEBaiEKDAALCyAGIAtBA3RqIAYgC0EDdGorAwAgEqA5AwAgByALQQN0aiAHIAtBA3RqKwMAIBOgOQMACyAJIQgMAAsLC94BAQZ/IANBfHEhCQJAA0AgByACTw0BIAcgA2xBAnQhCkEAIQgCQANAIAggCU8NASAKIAhBAnRqIQsgCEECdCEMIAEgC2ogACALav0ABAAgBCAMav0ABAD95QEgBSAMav0ABAD95gEgBiAMav0ABAD95AH9CwQAIAhBBGohCAwACwsCQANAIAggA08NASAKIAhBAnRqIQsgCEECdCEMIAEgC2ogACALaioCACAEIAxqKgIAkyAFIAxqKgIAlCAGIAxqKgIAkjgCACAIQQFqIQgMAAsLIAdBAWohBwwACwsLiAIBBn8gBEF8cSELAkADQCAJIANPDQEgCSAEbEECdCEMQQAhCgJAA0AgCiALTw0BIAwgCkECdGohDSAKQQJ0IQ4gAiANaiAAIA1q/QAEACAGIA5q/QAEAP3mASABIA1q/QAEACAFIA5q/QAEAP3lASAHIA5q/QAEAP3mAf3kASAIIA5q/QAEAP3kAf0LBAAgCkEEaiEKDAALCwJAA0AgCiAETw0BIAwgCkECdGohDSAKQQJ0IQ4gAiANaiAAIA1qKgIAIAYgDmoqAgCUIAEgDWoqAgAgBSAOaioCAJMgByAOaioCAJSSIAggDmoqAgCSOAIAIApBAWohCgwACwsgCUEBaiEJDAALCws=';

interface BatchNormExports {
  moments(x: number, rows: number, channels: number, blockRows: number, shift: number, sum: number, sq: number): void;
  gradSums(dy: number, x: number, rows: number, channels: number, blockRows: number, mean: number, sumDy: number, sumDyC: number): void;
  affine(x: number, y: number, rows: number, channels: number, center: number, scale: number, offset: number): void;
  gradDx(dy: number, x: number, dx: number, rows: number, channels: number, center: number, k1: number, k2: number, k3: number): void;
}

/** The module's one instance, created on first use. */
const kernels = lazyWasmInstance<BatchNormExports>(BATCH_NORM_WASM_BASE64);

/** Rows per block of the sums: about 8,192 values (32 KiB of float32), at least one row. */
function blockRowsOf(channels: number): number {
  return Math.max(1, Math.floor(8192 / channels));
}

/**
 * Places `parts` one after another in the kernel memory, 16-byte aligned: arrays are copied in, a
 * number reserves that many bytes left as they are (outputs the kernels write in full). Returns the
 * memory buffer and each part's byte offset.
 */
function layout(parts: ReadonlyArray<Float32Array | Float64Array | number>): { buffer: ArrayBuffer; at: number[] } {
  const at: number[] = [];
  let end = 0;
  for (const part of parts) {
    at.push(end);
    end += Math.ceil((typeof part === 'number' ? part : part.byteLength) / 16) * 16;
  }
  const buffer = kernels().reserve(end);
  parts.forEach((part, i) => {
    if (typeof part === 'number') return;
    const offset = at[i] as number;
    if (part instanceof Float64Array) new Float64Array(buffer, offset, part.length).set(part);
    else new Float32Array(buffer, offset, part.length).set(part);
  });
  return { buffer, at };
}

/** Batch statistics of the forward pass in training mode (float32, one value per channel). */
export interface BatchNormStatistics {
  mean: Float32Array;
  /** Biased variance. */
  variance: Float32Array;
  /** 1 / sqrt(variance + epsilon). */
  inverseStd: Float32Array;
}

/** Rows per kernel call: whole rows of at most `chunkElements` values, at least one row. */
function rowsPerCall(channels: number, chunkElements: number): number {
  return Math.max(1, Math.floor(chunkElements / channels));
}

/** Copies rows `r0` to `r1` of each [rows, channels] array of `sources` into the memory at the matching byte offsets. */
function copyRows(buffer: ArrayBuffer, channels: number, r0: number, r1: number, sources: ReadonlyArray<readonly [Float32Array, number]>): void {
  for (const [source, at] of sources) new Float32Array(buffer, at, (r1 - r0) * channels).set(source.subarray(r0 * channels, r1 * channels));
}

/**
 * Forward pass in training mode over `x` ([rows, channels]): the per-channel statistics (moments in
 * double precision about each channel's first value, so that they do not cancel: mean = shift + E[d],
 * variance = E[d²] - E[d]²), then y = (x - mean) · (gamma · inverseStd) + beta into `y`. Rows go
 * through the memory in chunks of at most `chunkElements` values; a tensor that fits in one is copied
 * in once.
 */
export function batchNormTrainingForward(
  x: Float32Array,
  rows: number,
  channels: number,
  gamma: Float32Array,
  beta: Float32Array,
  epsilon: number,
  y: Float32Array,
  chunkElements = CHUNK_ELEMENTS,
): BatchNormStatistics {
  const chunkRows = rowsPerCall(channels, chunkElements);
  const chunkBytes = 4 * Math.min(rows, chunkRows) * channels;
  const shift = Float64Array.from(x.subarray(0, channels));
  const { buffer, at } = layout([chunkBytes, shift, new Float64Array(channels), new Float64Array(channels), 4 * channels, 4 * channels, beta, chunkBytes]);
  const [xAt, shiftAt, sumAt, sqAt, centerAt, scaleAt, offsetAt, yAt] = at as [number, number, number, number, number, number, number, number];
  const e = kernels().exports;
  forEachChunk(rows, chunkRows, (r0, r1) => {
    copyRows(buffer, channels, r0, r1, [[x, xAt]]);
    e.moments(xAt, r1 - r0, channels, blockRowsOf(channels), shiftAt, sumAt, sqAt);
  });
  const sum = new Float64Array(buffer, sumAt, channels);
  const squares = new Float64Array(buffer, sqAt, channels);
  const meanShift = Float64Array.from(sum, (v) => v / rows);
  const mean = Float32Array.from(meanShift, (v, c) => (shift[c] as number) + v);
  const variance = Float32Array.from(squares, (v, c) => Math.max(0, v / rows - (meanShift[c] as number) ** 2));
  const inverseStd = Float32Array.from(variance, (v) => 1 / Math.sqrt(v + epsilon));
  new Float32Array(buffer, centerAt, channels).set(mean);
  new Float32Array(buffer, scaleAt, channels).set(Float64Array.from(variance, (v, c) => (gamma[c] as number) / Math.sqrt(v + epsilon)));
  forEachChunk(rows, chunkRows, (r0, r1) => {
    if (rows > chunkRows) copyRows(buffer, channels, r0, r1, [[x, xAt]]);
    e.affine(xAt, yAt, r1 - r0, channels, centerAt, scaleAt, offsetAt);
    y.set(new Float32Array(buffer, yAt, (r1 - r0) * channels), r0 * channels);
  });
  return { mean, variance, inverseStd };
}

/**
 * The closed-form gradient (ops/batch-norm-training.ts) over `dy` and `x` ([rows, channels]): the
 * per-channel sums of dy and dy · (x - mean) in double precision, then dx = dy · k1 + (x - mean) · k2 +
 * k3 into `dx` with k1 = gamma · s, k2 = -k1 · s² · Σdy(x - mean) / M, k3 = -k1 · Σdy / M (s the inverse
 * standard deviation, M the rows). Returns the gradients of scale (Σ dy · (x - mean) · s) and offset
 * (Σ dy). Chunked like the forward pass.
 */
export function batchNormTrainingBackward(
  dy: Float32Array,
  x: Float32Array,
  rows: number,
  channels: number,
  mean: Float32Array,
  inverseStd: Float32Array,
  gamma: Float32Array,
  dx: Float32Array,
  chunkElements = CHUNK_ELEMENTS,
): { dScale: Float32Array; dOffset: Float32Array } {
  const chunkRows = rowsPerCall(channels, chunkElements);
  const chunkBytes = 4 * Math.min(rows, chunkRows) * channels;
  const { buffer, at } = layout([chunkBytes, chunkBytes, Float64Array.from(mean), new Float64Array(channels), new Float64Array(channels), mean, 4 * channels, 4 * channels, 4 * channels, chunkBytes]);
  const [dyAt, xAt, mean64At, sumDyAt, sumDyCAt, centerAt, k1At, k2At, k3At, dxAt] = at as [number, number, number, number, number, number, number, number, number, number];
  const e = kernels().exports;
  forEachChunk(rows, chunkRows, (r0, r1) => {
    copyRows(buffer, channels, r0, r1, [[dy, dyAt], [x, xAt]]);
    e.gradSums(dyAt, xAt, r1 - r0, channels, blockRowsOf(channels), mean64At, sumDyAt, sumDyCAt);
  });
  const sumDy = Float64Array.from(new Float64Array(buffer, sumDyAt, channels));
  const sumDyCentred = Float64Array.from(new Float64Array(buffer, sumDyCAt, channels));
  const k1 = Float64Array.from(gamma, (g, c) => g * (inverseStd[c] as number));
  new Float32Array(buffer, k1At, channels).set(k1);
  new Float32Array(buffer, k2At, channels).set(Float64Array.from(k1, (k, c) => (-k * (inverseStd[c] as number) ** 2 * (sumDyCentred[c] as number)) / rows));
  new Float32Array(buffer, k3At, channels).set(Float64Array.from(k1, (k, c) => (-k * (sumDy[c] as number)) / rows));
  forEachChunk(rows, chunkRows, (r0, r1) => {
    if (rows > chunkRows) copyRows(buffer, channels, r0, r1, [[dy, dyAt], [x, xAt]]);
    e.gradDx(dyAt, xAt, dxAt, r1 - r0, channels, centerAt, k1At, k2At, k3At);
    dx.set(new Float32Array(buffer, dxAt, (r1 - r0) * channels), r0 * channels);
  });
  return { dScale: Float32Array.from(sumDyCentred, (v, c) => v * (inverseStd[c] as number)), dOffset: Float32Array.from(sumDy) };
}
