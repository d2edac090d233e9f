/**
 * @file Hugging Face `preprocessor_config.json` (the image processor saved beside a Hub model) read
 * as dmlkit {@link Preprocessing} fields.
 *
 * Read: `do_resize` + `size` (`{shortest_edge}`, `{height, width}`, `{longest_edge}`, or a bare
 * number: square, or the shortest edge for CLIP's processors), `resample` (Pillow's codes: 0 nearest,
 * 1 Lanczos, 2 bilinear, 3 bicubic), `do_center_crop` + `crop_size`, `crop_pct` (ConvNeXt: resize the
 * shortest edge to `shortest_edge / crop_pct`, then crop `shortest_edge`; from 384 px on, resize to
 * a square and no crop), `do_rescale` + `rescale_factor`, `do_normalize` + `image_mean` / `image_std`,
 * `do_convert_rgb` (images are always RGB). Crops use Hugging Face's offsets (`cropRounding: 'floor'`)
 * and resizes Pillow's filters (image/resample.ts). Other keys are ignored.
 *
 * Processors this covers, as transformers saves them: ViT (`{height, width}` 224, bilinear, no crop),
 * DINOv2 / BiT (shortest edge 256, bicubic, crop 224), CLIP (shortest edge 224, bicubic, crop 224,
 * CLIP statistics), SigLIP (`{height, width}`, bicubic, no crop, mean = std = 0.5), ConvNeXt (crop_pct).
 * A timm `config.json` (`pretrained_cfg`) is read the same way by {@link parseTimmConfig}.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { readRegularFile } from '../util/regular-file.js';
import type { Preprocessing, ResampleFilter } from './preprocessing.js';
import { normalisationValueProblem } from './validate.js';

/** The file name the Hub uses. */
export const PREPROCESSOR_CONFIG_FILE = 'preprocessor_config.json';

/** Pillow's resampling codes as `preprocessor_config.json` stores them. */
const PIL_RESAMPLE: Readonly<Record<number, ResampleFilter>> = { 0: 'nearest', 1: 'lanczos', 2: 'bilinear', 3: 'bicubic' };

/** Processors whose `resample` default is bicubic when the file does not say (transformers' class defaults). */
const BICUBIC_PROCESSORS = ['CLIP', 'Bit', 'Siglip', 'ConvNext', 'Dinov2'];

/** The file name timm's Hub models keep their `pretrained_cfg` in. */
export const TIMM_CONFIG_FILE = 'config.json';

/**
 * The preprocessing config that goes with the model at `modelPath`: a `preprocessor_config.json`
 * beside it, else in its parent folder (the Hub keeps ONNX exports in `onnx/` under the model's
 * root); else, in the same two places, a timm `config.json` (one with a `pretrained_cfg`, see
 * {@link isTimmConfig}; a transformers model's `config.json` holds none and is passed over);
 * undefined when there is none.
 */
export async function findPreprocessorConfig(modelPath: string): Promise<string | undefined> {
  const dir = path.dirname(path.resolve(modelPath));
  const folders = [dir, path.dirname(dir)];
  for (const candidate of folders.map((d) => path.join(d, PREPROCESSOR_CONFIG_FILE))) {
    if (await access(candidate).then(() => true, () => false)) return candidate;
  }
  for (const candidate of folders.map((d) => path.join(d, TIMM_CONFIG_FILE))) {
    const json = await readRegularFile(candidate, 'timm config').then((bytes) => JSON.parse(bytes.toString('utf8')) as unknown, () => undefined);
    if (isTimmConfig(json)) return candidate;
  }
  return undefined;
}

/** True for a timm model config: a `pretrained_cfg` object with an `input_size`, or those keys at the top (older timm). */
export function isTimmConfig(json: unknown): json is Record<string, unknown> {
  if (!isObject(json)) return false;
  const cfg = isObject(json['pretrained_cfg']) ? json['pretrained_cfg'] : json;
  return Array.isArray(cfg['input_size']) && (cfg['interpolation'] !== undefined || cfg['mean'] !== undefined);
}

/** timm's default `crop_pct` (timm.data.constants.DEFAULT_CROP_PCT). */
const TIMM_DEFAULT_CROP_PCT = 0.875;

/**
 * A timm `config.json` as {@link Preprocessing} fields, as timm's eval transform
 * (`timm.data.transforms_factory.transforms_imagenet_eval`) preprocesses: `input_size` [C, H, W],
 * `interpolation` (Pillow's filter: torchvision resizes PIL images with it, antialiased), `crop_pct`
 * (default 0.875) and `crop_mode`: `center` resizes the shorter side to floor(H / crop_pct) and crops
 * H x W (square inputs), `squash` resizes to floor(H / crop_pct) x floor(W / crop_pct) and crops;
 * `mean` and `std`. Crop offsets as torchvision rounds them. Errors (E_ARG, naming the file and key):
 * a value of the wrong type, `crop_mode` `border`, a non-square `center` input (timm's
 * ResizeKeepRatio), an interpolation Pillow has no filter for.
 */
export function parseTimmConfig(json: Record<string, unknown>, file: string): Partial<Preprocessing> {
  const cfg = isObject(json['pretrained_cfg']) ? json['pretrained_cfg'] : json;
  const bad = (key: string, expected: string): DmlError => new DmlError('E_ARG', `${file}: pretrained_cfg "${key}" is ${JSON.stringify(cfg[key])}; expected ${expected}`);
  const size = cfg['input_size'];
  if (!Array.isArray(size) || size.length !== 3 || !size.every((v) => Number.isInteger(v) && v > 0) || (size[0] !== 1 && size[0] !== 3)) {
    throw bad('input_size', '[channels (1 or 3), height, width]');
  }
  const [channels, height, width] = size as [1 | 3, number, number];
  const interpolation = cfg['interpolation'] ?? 'bilinear';
  const filters: Readonly<Record<string, ResampleFilter>> = { nearest: 'nearest', bilinear: 'bilinear', bicubic: 'bicubic', lanczos: 'lanczos' };
  const resample = typeof interpolation === 'string' ? filters[interpolation] : undefined;
  if (resample === undefined) throw bad('interpolation', 'nearest, bilinear, bicubic or lanczos');
  const cropPct = cfg['crop_pct'] ?? TIMM_DEFAULT_CROP_PCT;
  if (typeof cropPct !== 'number' || !(cropPct > 0 && cropPct <= 1)) throw bad('crop_pct', 'a number in (0, 1]');
  const mode = cfg['crop_mode'] ?? 'center';
  const out: Partial<Preprocessing> = { channels, height, width, resample, cropRounding: 'round', rescale: 1 / 255 };
  if (mode === 'center') {
    if (height !== width) throw bad('input_size', `a square input for crop_mode "center" (timm keeps the aspect ratio of a non-square one, which dmlkit does not do); got ${height}x${width}`);
    out.resizeMode = 'shorter';
    out.resizeShorter = Math.floor(height / cropPct);
  } else if (mode === 'squash') {
    out.resizeMode = 'exact';
    out.resizeHeight = Math.floor(height / cropPct);
    out.resizeWidth = Math.floor(width / cropPct);
    out.resizeShorter = Math.min(out.resizeHeight, out.resizeWidth);
  } else {
    throw bad('crop_mode', '"center" or "squash"');
  }
  for (const key of ['mean', 'std'] as const) {
    const value = cfg[key];
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.length !== channels || !value.every((v) => typeof v === 'number' && Number.isFinite(v))) throw bad(key, `${channels} numbers (one per channel)`);
    out[key] = value as number[];
  }
  return out;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads `file` (a `preprocessor_config.json`; a regular file, util/regular-file.ts) as the
 * preprocessing fields it determines. Errors (E_ARG, naming the file and the key): not a regular file,
 * invalid JSON, a value of the wrong type, an
 * unsupported `resample`, and settings that give images of different sizes (a shortest or longest
 * edge resize without a centre crop).
 */
export async function readPreprocessorConfig(file: string): Promise<Partial<Preprocessing>> {
  const text = (await readRegularFile(file, 'preprocessor config')).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new DmlError('E_ARG', `${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(json)) throw new DmlError('E_ARG', `${file}: expected a JSON object (a Hugging Face image processor config)`);
  return isTimmConfig(json) ? parseTimmConfig(json, file) : parsePreprocessorConfig(json, file);
}

/** {@link readPreprocessorConfig} on parsed JSON; `file` names it in errors. */
export function parsePreprocessorConfig(json: Record<string, unknown>, file: string): Partial<Preprocessing> {
  const bad = (key: string, expected: string): DmlError => new DmlError('E_ARG', `${file}: "${key}" is ${JSON.stringify(json[key])}; expected ${expected}`);
  const flag = (key: string, fallback: boolean): boolean => {
    const value = json[key];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'boolean') throw bad(key, 'true or false');
    return value;
  };
  const positiveInt = (key: string, value: unknown): number => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw bad(key, 'a positive integer or an object of them');
    return value;
  };
  const processor = String(json['image_processor_type'] ?? json['feature_extractor_type'] ?? '');
  const isClip = processor.startsWith('CLIP');
  const out: Partial<Preprocessing> = { channels: 3, cropRounding: 'floor' };

  // Resampling filter.
  const resample = json['resample'];
  if (resample === undefined || resample === null) {
    out.resample = BICUBIC_PROCESSORS.some((p) => processor.startsWith(p)) ? 'bicubic' : 'bilinear';
  } else {
    const filter = typeof resample === 'number' ? PIL_RESAMPLE[resample] : undefined;
    if (filter === undefined) throw bad('resample', '0 (nearest), 1 (lanczos), 2 (bilinear) or 3 (bicubic)');
    out.resample = filter;
  }

  // Crop.
  const cropSize = json['crop_size'];
  let crop: { height: number; width: number } | undefined;
  if (flag('do_center_crop', cropSize !== undefined && cropSize !== null) && cropSize !== undefined && cropSize !== null) {
    if (typeof cropSize === 'number') crop = { height: positiveInt('crop_size', cropSize), width: cropSize };
    else if (isObject(cropSize)) crop = { height: positiveInt('crop_size', cropSize['height']), width: positiveInt('crop_size', cropSize['width']) };
    else throw bad('crop_size', 'a number or {"height", "width"}');
  }

  // Resize.
  if (!flag('do_resize', true)) {
    out.resizeMode = 'none';
  } else {
    const size = json['size'];
    const shortest = typeof size === 'number' && isClip ? size : isObject(size) ? size['shortest_edge'] : undefined;
    const square = typeof size === 'number' && !isClip ? size : undefined;
    const cropPct = json['crop_pct'];
    if (isObject(size) && size['height'] !== undefined) {
      out.resizeMode = 'exact';
      out.resizeHeight = positiveInt('size', size['height']);
      out.resizeWidth = positiveInt('size', size['width']);
    } else if (square !== undefined) {
      out.resizeMode = 'exact';
      out.resizeHeight = out.resizeWidth = positiveInt('size', square);
    } else if (shortest !== undefined && typeof cropPct === 'number' && crop === undefined) {
      // ConvNeXt: below 384 px, resize the shortest edge to shortest / crop_pct and crop shortest x shortest.
      const edge = positiveInt('size', shortest);
      if (!(cropPct > 0 && cropPct <= 1)) throw bad('crop_pct', 'a number in (0, 1]');
      if (edge < 384) {
        out.resizeMode = 'shorter';
        out.resizeShorter = Math.trunc(edge / cropPct);
        crop = { height: edge, width: edge };
      } else {
        out.resizeMode = 'exact';
        out.resizeHeight = out.resizeWidth = edge;
      }
    } else if (shortest !== undefined) {
      out.resizeMode = 'shorter';
      out.resizeShorter = positiveInt('size', shortest);
    } else if (isObject(size) && size['longest_edge'] !== undefined) {
      out.resizeMode = 'longer';
      out.resizeLonger = positiveInt('size', size['longest_edge']);
    } else {
      throw bad('size', 'a number, {"shortest_edge"}, {"height", "width"} or {"longest_edge"}');
    }
  }
  if (crop !== undefined) {
    out.height = crop.height;
    out.width = crop.width;
  } else if (out.resizeMode === 'exact') {
    out.height = out.resizeHeight as number;
    out.width = out.resizeWidth as number;
  } else if (out.resizeMode !== 'none') {
    throw new DmlError(
      'E_ARG',
      `${file}: a ${out.resizeMode === 'shorter' ? 'shortest' : 'longest'}_edge resize without a centre crop (do_center_crop, crop_size) gives images of different sizes, which cannot be batched; expected a crop or a {"height", "width"} size`,
    );
  }
  if (out.resizeMode === 'exact') out.resizeShorter = Math.min(out.resizeWidth as number, out.resizeHeight as number);
  if (out.resizeMode === 'longer') out.resizeShorter = out.resizeLonger as number;

  // Rescale and normalise.
  if (flag('do_rescale', true)) {
    const factor = json['rescale_factor'] ?? 1 / 255;
    const problem = normalisationValueProblem('rescale', factor);
    if (problem !== undefined) throw bad('rescale_factor', problem);
    out.rescale = factor as number;
  } else {
    out.rescale = 1;
  }
  if (flag('do_normalize', true)) {
    for (const key of ['image_mean', 'image_std'] as const) {
      const value = json[key];
      const list = typeof value === 'number' ? [value, value, value] : value;
      if (!Array.isArray(list) || list.length !== 3 || !list.every((v) => typeof v === 'number' && Number.isFinite(v))) {
        throw bad(key, 'three numbers (one per RGB channel)');
      }
      const problem = list.map((v: unknown) => normalisationValueProblem(key === 'image_mean' ? 'mean' : 'std', v)).find((p) => p !== undefined);
      if (problem !== undefined) throw bad(key, `three numbers, each ${problem}`);
      if (key === 'image_mean') out.mean = list as number[];
      else out.std = list as number[];
    }
  } else {
    out.mean = [0, 0, 0];
    out.std = [1, 1, 1];
  }
  return out;
}
