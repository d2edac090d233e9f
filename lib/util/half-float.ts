/**
 * @file 16-bit floating-point formats as their bits in a `Uint16Array` (Node 20 has no
 * `Float16Array`): IEEE 754 half precision (`float16`) and bfloat16 (the top half of a float32).
 * Used to widen stored half-precision embeddings and to feed and read float16/bfloat16 models.
 */

/** The value of an IEEE 754 half-precision number given as its 16 bits. */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // zero and subnormals
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : Number.NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * The 16 bits of the IEEE 754 half-precision number nearest to `value` (round half to even, as
 * numpy's `astype(float16)`): overflow gives infinity, tiny values subnormals or zero, NaN stays NaN.
 */
export function floatToHalf(value: number): number {
  f32[0] = value;
  const x = u32[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let bits = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    if (rest > half || (rest === half && (bits & 1) === 1)) bits++;
    return sign | bits;
  }
  let bits = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  // A carry out of the mantissa moves into the exponent, which is the right result (up to infinity).
  if (rest > 0x1000 || (rest === 0x1000 && (bits & 1) === 1)) bits++;
  return sign | bits;
}

/** The value of a bfloat16 number given as its 16 bits. */
export function bfloat16ToFloat(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0] as number;
}

/** The 16 bits of the bfloat16 number nearest to `value` (round half to even; NaN stays NaN). */
export function floatToBfloat16(value: number): number {
  f32[0] = value;
  const x = u32[0] as number;
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) return ((x >>> 16) | 0x40) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** `values` as float16 bits. */
export function toHalfArray(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = floatToHalf(values[i] as number);
  return out;
}

/** `values` as bfloat16 bits. */
export function toBfloat16Array(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = floatToBfloat16(values[i] as number);
  return out;
}

/** float16 bits widened to float32 (exact). */
export function fromHalfArray(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = halfToFloat(bits[i] as number);
  return out;
}

/** bfloat16 bits widened to float32 (exact). */
export function fromBfloat16Array(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = bfloat16ToFloat(bits[i] as number);
  return out;
}
