/**
 * @file Parity of an exported model: run the ONNX file in onnxruntime on a batch and compare it with
 * what the source computes (TensorFlow.js, or backbone + TensorFlow.js head for a composition).
 *
 * The rule: the largest absolute difference over all output values must not exceed
 * {@link PARITY_TOLERANCE} (1e-4). Embeddings are L2-normalised, so values lie in [-1, 1] and the
 * bound is absolute. The smallest per-row cosine similarity is reported beside it. A NaN or infinite
 * value on either side fails the check.
 */
import ort from '../onnx/ort.js';
import { DmlError } from '../errors.js';
import { createSession } from '../onnx/session.js';
import type { Rng } from '../util/rng.js';

/** Largest absolute output difference an export may have. */
export const PARITY_TOLERANCE = 1e-4;

/** Outcome of a parity check. */
export interface ParityReport {
  /** Inputs compared. */
  rows: number;
  /** Largest |onnx - reference| over all values (NaN when a value is not finite). */
  maxAbsDiff: number;
  /** Smallest cosine similarity between an ONNX row and its reference row. */
  minCosine: number;
  tolerance: number;
}

/** Compares `actual` (ONNX) with `expected` (reference), both `rows` rows of equal length. */
export function compareOutputs(actual: Float32Array, expected: Float32Array, rows: number): ParityReport {
  if (actual.length !== expected.length || rows < 1 || actual.length % rows !== 0) {
    throw new DmlError('E_MODEL', `Parity check: the ONNX output has ${actual.length} values and the reference ${expected.length}, for ${rows} inputs`);
  }
  const dim = actual.length / rows;
  let maxAbsDiff = 0;
  let minCosine = 1;
  for (let r = 0; r < rows; r++) {
    let dot = 0;
    let aa = 0;
    let bb = 0;
    for (let j = r * dim; j < (r + 1) * dim; j++) {
      const a = actual[j] as number;
      const b = expected[j] as number;
      const diff = Math.abs(a - b);
      if (!Number.isFinite(diff)) maxAbsDiff = Number.NaN;
      else if (diff > maxAbsDiff) maxAbsDiff = diff;
      dot += a * b;
      aa += a * a;
      bb += b * b;
    }
    const cosine = aa === 0 && bb === 0 ? 1 : dot / Math.sqrt(aa * bb);
    minCosine = Number.isNaN(cosine) ? Number.NaN : Math.min(minCosine, cosine);
  }
  return { rows, maxAbsDiff, minCosine, tolerance: PARITY_TOLERANCE };
}

/** Throws E_MODEL unless `report` is within tolerance; `what` names the model (the file is then not written). */
export function assertParity(report: ParityReport, what: string): void {
  if (report.maxAbsDiff <= report.tolerance) return;
  throw new DmlError(
    'E_MODEL',
    `Parity check failed for ${what}: onnxruntime and the reference differ by up to ${report.maxAbsDiff} (tolerance ${report.tolerance}; min cosine ${report.minCosine}) over ${report.rows} inputs; nothing was written`,
  );
}

/** Runs `model` once on the CPU with one float32 input and returns output `outputName`. */
export async function runOnnxModel(model: Uint8Array, input: { name: string; data: Float32Array; dims: number[] }, outputName: string): Promise<Float32Array> {
  const { session } = await createSession(model, { device: 'cpu', name: 'exported model' });
  try {
    const result = await session.run({ [input.name]: new ort.Tensor('float32', input.data, input.dims) }, [outputName]);
    const out = result[outputName];
    if (!out || !(out.data instanceof Float32Array)) throw new DmlError('E_MODEL', `The exported model returned no float32 output ${outputName}`);
    return out.data;
  } catch (err) {
    if (err instanceof DmlError) throw err;
    throw new DmlError('E_MODEL', `The exported model fails in onnxruntime: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  } finally {
    await session.release();
  }
}

/**
 * `count` random NHWC images of `height` x `width` x `channels` as a model sees them: uniform pixel
 * values in [0, 1] normalised per channel by `mean` and `std`.
 */
export function randomImages(rng: Rng, count: number, image: { height: number; width: number; channels: number }, mean: readonly number[], std: readonly number[]): Float32Array {
  const { height, width, channels } = image;
  const out = new Float32Array(count * height * width * channels);
  for (let i = 0; i < out.length; i++) {
    const c = i % channels;
    out[i] = (rng.next() - (mean[c] ?? 0)) / (std[c] ?? 1);
  }
  return out;
}
