/**
 * @file The polyphase form of a strided convolution's input gradient: s stride-1 correlations per axis.
 *
 * Along one axis, with forward y[o] = Σ_r x[s o + r - padBefore] w[r] (stride s, dilation 1), the rows
 * i = s m + p of dx (phase p of s) are
 *
 *   dx[s m + p] = Σ over taps r ≡ p + padBefore (mod s) of dy[m + (p + padBefore - r) / s] w[r],
 *
 * a correlation of dy with those taps in reverse order (tap j is r = p + padBefore - s (qMin + j), qMin
 * the smallest offset), dy padded by -qMin before and by what makes the phase's length the input's
 * length / s after. A 2-D convolution's input gradient is then one stride-1 convolution per (row phase,
 * column phase), interleaved; with stride 1 it is the one phase of the flipped kernel. The ort-cpu
 * backend (lib/engine/tfjs/ort-cpu/blocked-conv-models.ts) and the graph trainer's blocked convolutions
 * (lib/engine/autodiff/rules/blocked-convolution.ts) compute input gradients so.
 */

/** One output phase along one axis of the input gradient (see the file comment). */
export interface AxisPhase {
  /** Forward filter taps, in the order the phase's correlation uses them. */
  taps: number[];
  padBefore: number;
  padAfter: number;
}

/**
 * The phases along one axis of a stride-`stride` convolution (dilation 1) with `kernel` taps,
 * `padBefore` rows of padding, input length `inLength` and output length `outLength`; null when the
 * polyphase form does not apply (an input length not divisible by the stride, a phase without taps, or
 * one that would need negative padding).
 */
export function axisPhases(kernel: number, stride: number, padBefore: number, inLength: number, outLength: number): AxisPhase[] | null {
  if (inLength % stride !== 0) return null;
  const rows = inLength / stride;
  const phases: AxisPhase[] = [];
  for (let p = 0; p < stride; p++) {
    const taps: number[] = [];
    for (let r = kernel - 1; r >= 0; r--) if ((((r - p - padBefore) % stride) + stride) % stride === 0) taps.push(r);
    if (taps.length === 0) return null;
    const qMin = (p + padBefore - (taps[0] as number)) / stride;
    const before = 0 - qMin; // not -qMin: -0 for qMin 0
    const after = rows + taps.length - 1 - outLength - before;
    if (before < 0 || after < 0) return null;
    phases.push({ taps, padBefore: before, padAfter: after });
  }
  return phases;
}
