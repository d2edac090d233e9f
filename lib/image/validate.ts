/**
 * @file Argument checks for the image pipeline's settings. Each failure is an `E_ARG` DmlError that
 * names the parameter, what was expected and what was received.
 */
import { RESAMPLE_FILTERS, RESIZE_MODES, type Preprocessing, type TrainAugmentation } from './preprocessing.js';
import { DmlError, invalidParameterError } from '../errors.js';

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A `[min, max]` pair of finite numbers with `min <= max`. */
function isRange(value: unknown): value is [number, number] {
  return (
    Array.isArray(value) && value.length === 2 && isFiniteNumber(value[0]) && isFiniteNumber(value[1]) && value[0] <= value[1]
  );
}

function describeRange(value: unknown): unknown {
  return Array.isArray(value) ? `[${value.join(', ')}]` : value;
}

/** The largest finite float32: image tensors are float32, so a mean or std beyond it is Infinity there. */
const FLOAT32_MAX = 3.4028234663852886e38;

/** The smallest positive normal float32: dividing by a std below it overflows. */
const FLOAT32_MIN_NORMAL = 2 ** -126;

/**
 * What a normalisation value must be, in words, when `value` is not that: a mean a finite float32, a
 * std (or a pixel rescale factor) a positive float32 that images can be divided (multiplied) by without
 * overflow. Undefined when `value` is fine.
 */
export function normalisationValueProblem(key: 'mean' | 'std' | 'rescale', value: unknown): string | undefined {
  if (key === 'mean') return isFiniteNumber(value) && Math.abs(value) <= FLOAT32_MAX ? undefined : 'a finite number of float32 range (at most 3.4e38 in magnitude)';
  return isFiniteNumber(value) && value >= FLOAT32_MIN_NORMAL && value <= FLOAT32_MAX ? undefined : 'a positive number of float32 range, in [1.2e-38, 3.4e38]';
}

/**
 * Checks per-channel normalisation values: `mean` and `std` hold `channels` numbers each, as
 * {@link normalisationValueProblem} wants them. `name` prefixes the parameter names in errors.
 */
export function validateNormalisation(mean: unknown, std: unknown, channels: number, name: string): void {
  for (const [key, values] of [['mean', mean], ['std', std]] as const) {
    if (!Array.isArray(values) || values.length !== channels) {
      throw invalidParameterError(`${name}.${key}`, `an array of ${channels} numbers (one per channel)`, values);
    }
    values.forEach((v: unknown, c) => {
      const problem = normalisationValueProblem(key, v);
      if (problem !== undefined) throw invalidParameterError(`${name}.${key}[${c}]`, problem, v);
    });
  }
}

/**
 * Checks that black (0) and white (255) pixels stay apart after `(x * rescale - mean) / std` in
 * float32, channel by channel: otherwise every image becomes the same input and nothing can be learned
 * or told apart. Errors: E_ARG naming `name`'s rescale, mean and std.
 */
function checkPixelsApart(rescale: number, mean: readonly number[], std: readonly number[], name: string): void {
  mean.forEach((m, c) => {
    const s = std[c] as number;
    if (Math.fround((0 - m) / s) === Math.fround((Math.fround(255 * rescale) - m) / s)) {
      throw new DmlError(
        'E_ARG',
        `${name}: rescale ${rescale}, mean ${m} and std ${s} (channel ${c}) map black and white pixels to the same float32 input, so every image looks alike; expected a rescale (1/255 by default) and std that keep them apart`,
      );
    }
  });
}

/**
 * Checks a {@link Preprocessing}: positive integer sizes, `resizeShorter >= min(height, width)` (at
 * least one axis of the resized image covers the crop; `>= max(height, width)` means the crop always
 * fits and is never zero-padded), 1 or 3 channels, a known layout, mean/std as
 * {@link validateNormalisation}, a rescale of float32 range, and black and white pixels that stay apart
 * after normalisation.
 */
export function validatePreprocessing(preprocessing: Preprocessing, name = 'preprocessing'): void {
  if (typeof preprocessing !== 'object' || preprocessing === null) {
    throw invalidParameterError(name, 'an object', preprocessing);
  }
  const { height, width, resizeShorter, channels, layout } = preprocessing;
  if (!isPositiveInteger(height)) throw invalidParameterError(`${name}.height`, 'a positive integer', height);
  if (!isPositiveInteger(width)) throw invalidParameterError(`${name}.width`, 'a positive integer', width);
  const mode = preprocessing.resizeMode ?? 'shorter';
  if (!RESIZE_MODES.includes(mode)) throw invalidParameterError(`${name}.resizeMode`, `one of ${RESIZE_MODES.join(', ')}`, mode);
  if (!isPositiveInteger(resizeShorter) || (mode === 'shorter' && resizeShorter < Math.min(height, width))) {
    throw invalidParameterError(
      `${name}.resizeShorter`,
      `an integer of at least min(height, width) = ${Math.min(height, width)}`,
      resizeShorter,
    );
  }
  if (mode === 'longer' && !isPositiveInteger(preprocessing.resizeLonger)) {
    throw invalidParameterError(`${name}.resizeLonger`, "a positive integer (resizeMode 'longer')", preprocessing.resizeLonger);
  }
  if (mode === 'exact') {
    for (const key of ['resizeWidth', 'resizeHeight'] as const) {
      if (!isPositiveInteger(preprocessing[key])) throw invalidParameterError(`${name}.${key}`, "a positive integer (resizeMode 'exact')", preprocessing[key]);
    }
  }
  if (preprocessing.resample !== undefined && !RESAMPLE_FILTERS.includes(preprocessing.resample)) {
    throw invalidParameterError(`${name}.resample`, `one of ${RESAMPLE_FILTERS.join(', ')}`, preprocessing.resample);
  }
  if (preprocessing.cropRounding !== undefined && preprocessing.cropRounding !== 'round' && preprocessing.cropRounding !== 'floor') {
    throw invalidParameterError(`${name}.cropRounding`, "'round' or 'floor'", preprocessing.cropRounding);
  }
  const rescaleProblem = preprocessing.rescale === undefined ? undefined : normalisationValueProblem('rescale', preprocessing.rescale);
  if (rescaleProblem !== undefined) throw invalidParameterError(`${name}.rescale`, rescaleProblem, preprocessing.rescale);
  if (channels !== 1 && channels !== 3) throw invalidParameterError(`${name}.channels`, '1 or 3', channels);
  if (layout !== 'NCHW' && layout !== 'NHWC') throw invalidParameterError(`${name}.layout`, "'NCHW' or 'NHWC'", layout);
  validateNormalisation(preprocessing.mean, preprocessing.std, channels, name);
  checkPixelsApart(preprocessing.rescale ?? 1 / 255, preprocessing.mean, preprocessing.std, name);
}

/**
 * Checks a {@link TrainAugmentation}: `0 < scale[0] <= scale[1] <= 1`, `0 < ratio[0] <= ratio[1]`
 * (finite) and `flipProbability` in [0, 1].
 */
export function validateAugmentation(augmentation: TrainAugmentation, name = 'augmentation'): void {
  if (typeof augmentation !== 'object' || augmentation === null) {
    throw invalidParameterError(name, 'an object', augmentation);
  }
  const { scale, ratio, flipProbability } = augmentation;
  if (!isRange(scale) || !(scale[0] > 0 && scale[1] <= 1)) {
    throw invalidParameterError(`${name}.scale`, '[min, max] with 0 < min <= max <= 1', describeRange(scale));
  }
  if (!isRange(ratio) || !(ratio[0] > 0)) {
    throw invalidParameterError(`${name}.ratio`, '[min, max] with 0 < min <= max (finite)', describeRange(ratio));
  }
  if (!isFiniteNumber(flipProbability) || flipProbability < 0 || flipProbability > 1) {
    throw invalidParameterError(`${name}.flipProbability`, 'a number in [0, 1]', flipProbability);
  }
}
