/**
 * @file The fused Adam update as a WebAssembly SIMD kernel: four float32 lanes per instruction, each
 * operation an IEEE float32 operation (`f32x4.mul`, `add`, `div`, `sqrt`), so the results equal
 * tfjs's Adam kernel by kernel (and the `Math.fround` after every operation that a JavaScript loop
 * needs to emulate float32) bit for bit. A JavaScript loop over a 1M-weight kernel took about 12 ms
 * per step, bound by its double-precision divisions and roundings; this takes a few.
 *
 * {@link ADAM_WAT} is the source; {@link ADAM_WASM_BASE64} is its assembly by wabt (`wat2wasm`,
 * SIMD enabled), which `scripts/tools/assemble-wasm.ts` prints and spec/engine/tfjs/wasm-kernels.spec.ts checks
 * against the source.
 *
 * Memory layout per call (byte offsets chosen by {@link AdamKernel}): the weights w, gradient g and
 * moments m, v, each `n` float32 values with `n` a multiple of 4 (the caller pads), a chunk of each
 * variable at a time.
 */
import { CHUNK_ELEMENTS, forEachChunk, roundUpToLanes, WasmInstance } from './wasm-instance.js';

/** WebAssembly text of the kernel (see the file comment). */
export const ADAM_WAT = `(module
  (memory (export "memory") 1)
  ;; Per element, in tfjs's order, every operation rounded to float32:
  ;;   m <- m*b1 + g*c1;  v <- v*b2 + (g*g)*c2;  w <- ((m/bias1) / (sqrt(v/bias2) + eps)) * negLr + w
  (func (export "adam")
    (param $w i32) (param $g i32) (param $m i32) (param $v i32) (param $n i32)
    (param $b1 f32) (param $b2 f32) (param $c1 f32) (param $c2 f32)
    (param $bias1 f32) (param $bias2 f32) (param $eps f32) (param $negLr f32)
    (local $off i32) (local $end i32)
    (local $vb1 v128) (local $vb2 v128) (local $vc1 v128) (local $vc2 v128)
    (local $vbias1 v128) (local $vbias2 v128) (local $veps v128) (local $vlr v128)
    (local $gj v128) (local $mj v128) (local $vj v128)
    (local.set $vb1 (f32x4.splat (local.get $b1)))
    (local.set $vb2 (f32x4.splat (local.get $b2)))
    (local.set $vc1 (f32x4.splat (local.get $c1)))
    (local.set $vc2 (f32x4.splat (local.get $c2)))
    (local.set $vbias1 (f32x4.splat (local.get $bias1)))
    (local.set $vbias2 (f32x4.splat (local.get $bias2)))
    (local.set $veps (f32x4.splat (local.get $eps)))
    (local.set $vlr (f32x4.splat (local.get $negLr)))
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $off) (local.get $end)))
        (local.set $gj (v128.load (i32.add (local.get $g) (local.get $off))))
        (local.set $mj
          (f32x4.add
            (f32x4.mul (v128.load (i32.add (local.get $m) (local.get $off))) (local.get $vb1))
            (f32x4.mul (local.get $gj) (local.get $vc1))))
        (local.set $vj
          (f32x4.add
            (f32x4.mul (v128.load (i32.add (local.get $v) (local.get $off))) (local.get $vb2))
            (f32x4.mul (f32x4.mul (local.get $gj) (local.get $gj)) (local.get $vc2))))
        (v128.store (i32.add (local.get $m) (local.get $off)) (local.get $mj))
        (v128.store (i32.add (local.get $v) (local.get $off)) (local.get $vj))
        (v128.store (i32.add (local.get $w) (local.get $off))
          (f32x4.add
            (f32x4.mul
              (f32x4.div
                (f32x4.div (local.get $mj) (local.get $vbias1))
                (f32x4.add (f32x4.sqrt (f32x4.div (local.get $vj) (local.get $vbias2))) (local.get $veps)))
              (local.get $vlr))
            (v128.load (i32.add (local.get $w) (local.get $off)))))
        (local.set $off (i32.add (local.get $off) (i32.const 16)))
        (br $next))))
  ;; x <- x * factor, rounded to float32 (decoupled weight decay)
  (func (export "scale") (param $x i32) (param $n i32) (param $factor f32)
    (local $off i32) (local $end i32) (local $vf v128)
    (local.set $vf (f32x4.splat (local.get $factor)))
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $off) (local.get $end)))
        (v128.store (i32.add (local.get $x) (local.get $off))
          (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $off))) (local.get $vf)))
        (local.set $off (i32.add (local.get $off) (i32.const 16)))
        (br $next)))))
`;

/** {@link ADAM_WAT} assembled (base64 of the .wasm bytes). */
export const ADAM_WASM_BASE64 = 'AGFzbQEAAAABFwJgDX9/f39/fX19fX19fX0AYAN/f30AAwMCAAEFAwEAAQcZAwZtZW1vcnkCAARhZGFtAAAFc2NhbGUAAQqkAgLgAQICfwt7IAX9EyEPIAb9EyEQIAf9EyERIAj9EyESIAn9EyETIAr9EyEUIAv9EyEVIAz9EyEWIARBAnQhDgJAA0AgDSAOTw0BIAEgDWr9AAQAIRcgAiANav0ABAAgD/3mASAXIBH95gH95AEhGCADIA1q/QAEACAQ/eYBIBcgF/3mASAS/eYB/eQBIRkgAiANaiAY/QsEACADIA1qIBn9CwQAIAAgDWogGCAT/ecBIBkgFP3nAf3jASAV/eQB/ecBIBb95gEgACANav0ABAD95AH9CwQAIA1BEGohDQwACwsLQAICfwF7IAL9EyEFIAFBAnQhBAJAA0AgAyAETw0BIAAgA2ogACADav0ABAAgBf3mAf0LBAAgA0EQaiEDDAALCws=';

/** Scalars of one Adam step, all float32 values (already rounded). */
export interface AdamScalars {
  beta1: number;
  beta2: number;
  oneMinusBeta1: number;
  oneMinusBeta2: number;
  /** 1 - beta1^t and 1 - beta2^t. */
  bias1: number;
  bias2: number;
  epsilon: number;
  negLearningRate: number;
}

interface AdamExports {
  adam(w: number, g: number, m: number, v: number, n: number, b1: number, b2: number, c1: number, c2: number, bias1: number, bias2: number, eps: number, negLr: number): void;
  scale(x: number, n: number, factor: number): void;
}

/** One instance of the kernel with its own memory, grown as variables need. */
export class AdamKernel {
  readonly #wasm = new WasmInstance<AdamExports>(ADAM_WASM_BASE64);

  /**
   * One Adam step on `w` with gradient `g` and moments `m`, `v` (all of one length; `w`, `m` and `v`
   * are updated in place), then `w <- w * decayFactor` when a factor is given; `chunkElements` values
   * of each array per kernel call.
   */
  step(w: Float32Array, g: Float32Array, m: Float32Array, v: Float32Array, s: AdamScalars, decayFactor?: number, chunkElements = CHUNK_ELEMENTS): void {
    const n = w.length;
    if (g.length !== n || m.length !== n || v.length !== n) throw new Error(`Adam kernel: arrays of ${n}, ${g.length}, ${m.length} and ${v.length} elements; expected equal lengths`);
    forEachChunk(n, chunkElements, (start, end) => {
      const count = end - start;
      const padded = roundUpToLanes(count);
      const heap = new Float32Array(this.#wasm.reserve(16 * padded), 0, 4 * padded);
      const [wAt, gAt, mAt, vAt] = [0, padded, 2 * padded, 3 * padded];
      heap.set(w.subarray(start, end), wAt);
      heap.set(g.subarray(start, end), gAt);
      heap.set(m.subarray(start, end), mAt);
      heap.set(v.subarray(start, end), vAt);
      const e = this.#wasm.exports;
      e.adam(wAt * 4, gAt * 4, mAt * 4, vAt * 4, padded, s.beta1, s.beta2, s.oneMinusBeta1, s.oneMinusBeta2, s.bias1, s.bias2, s.epsilon, s.negLearningRate);
      if (decayFactor !== undefined) e.scale(wAt * 4, padded, decayFactor);
      w.set(heap.subarray(wAt, wAt + count), start);
      m.set(heap.subarray(mAt, mAt + count), start);
      v.set(heap.subarray(vAt, vAt + count), start);
    });
  }
}
