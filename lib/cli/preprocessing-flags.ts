/**
 * @file The image-preprocessing override flags shared by the commands that embed images with an
 * ONNX model (`dml eval`, `dml index build`): `--size`, `--resize`, `--stretch`, `--channels`, `--layout`, `--mean`,
 * `--std`, `--resample`, `--crop-rounding`, and `--preprocessor-config` (a file to read them from). Each overrides one field of what the model's metadata (or the defaults) say; an index
 * records the result, so `dml index add` and `dml serve` embed the same way.
 */
import type { Command } from 'commander';
import { DmlError } from '../errors.js';
import { RESAMPLE_FILTERS, type Preprocessing } from '../image/preprocessing.js';
import { parseChoice, parseNumberList, parsePositiveInt, parseSize } from './parse-options.js';

/** The flags as commander hands them over (strings until parsed). */
export interface PreprocessingFlags {
  preprocessorConfig?: string;
  resample?: string;
  cropRounding?: string;
  size?: string;
  resize?: string;
  stretch?: boolean;
  channels?: string;
  layout?: string;
  mean?: string;
  std?: string;
}

/** Declares the preprocessing override flags on `command`. */
export function addPreprocessingOptions(command: Command): Command {
  return command
    .option('--preprocessor-config <file>', 'a Hugging Face preprocessor_config.json to take the preprocessing from (default: the one beside the model or in its parent folder)')
    .option('--size <HxW>', 'input size override, e.g. 224 or 224x224 (default: the model\'s)')
    .option('--resize <n>', 'shorter side before the centre crop (default: the model\'s, else the larger input side / 0.875)')
    .option('--stretch', "resize each image to the input size, its aspect ratio not kept and nothing cropped, as Keras does (image.load_img(target_size=...), tf.image.resize) (default: the model's resize, else shorter side then centre crop)")
    .option('--channels <n>', '1 or 3 (default: the model\'s)')
    .option('--layout <layout>', 'NCHW or NHWC (default: the model\'s)')
    .option('--mean <list>', 'per-channel mean on [0,1] pixels, e.g. 0.485,0.456,0.406 (default: the model\'s, else ImageNet\'s for 3 channels, 0 for 1)')
    .option('--std <list>', 'per-channel std, e.g. 0.229,0.224,0.225 (default: the model\'s, else ImageNet\'s for 3 channels, 1 for 1)')
    .option('--resample <filter>', "resize as Pillow does with this filter: nearest, bilinear, bicubic or lanczos (default: sharp's linear kernel)")
    .option('--crop-rounding <rule>', 'centre-crop offset of an odd margin: round (torchvision) or floor (Hugging Face) (default: round)');
}

/** The fields the flags override (empty when none is given); E_ARG naming the flag for a bad value. */
export function preprocessingOverrides(flags: PreprocessingFlags): Partial<Preprocessing> {
  const o: Partial<Preprocessing> = {};
  if (flags.size !== undefined) [o.height, o.width] = parseSize(flags.size, '--size');
  if (flags.resize !== undefined && flags.stretch === true) throw new DmlError('E_ARG', `--resize ${flags.resize} and --stretch: give one (--stretch resizes to the input size itself)`);
  if (flags.resize !== undefined) o.resizeShorter = parsePositiveInt(flags.resize, '--resize');
  // The input size is known once the model is read: resolveImagePreprocessing fills the exact size in.
  if (flags.stretch === true) o.resizeMode = 'exact';
  if (flags.channels !== undefined) o.channels = Number(parseChoice(flags.channels, ['1', '3'], '--channels')) as 1 | 3;
  if (flags.layout !== undefined) o.layout = parseChoice(flags.layout.toUpperCase(), ['NCHW', 'NHWC'] as const, '--layout');
  if (flags.mean !== undefined) o.mean = parseNumberList(flags.mean, '--mean');
  if (flags.std !== undefined) o.std = parseNumberList(flags.std, '--std');
  if (flags.resample !== undefined) o.resample = parseChoice(flags.resample, RESAMPLE_FILTERS, '--resample');
  if (flags.cropRounding !== undefined) o.cropRounding = parseChoice(flags.cropRounding, ['round', 'floor'] as const, '--crop-rounding');
  return o;
}
