/**
 * @file Preprocessing settings: how an image becomes the Float32 tensor a model expects.
 */

/** Tensor memory layout of an image batch. */
export type TensorLayout = 'NCHW' | 'NHWC';

/**
 * How an image is resized before the centre crop: `shorter` side to `resizeShorter` keeping the
 * aspect ratio (torchvision's `Resize(int)`, Hugging Face's `{shortest_edge}`), `longer` side to
 * `resizeLonger` (`{longest_edge}`), `exact` to `resizeWidth x resizeHeight` ignoring the aspect ratio
 * (`{height, width}`: ViT, SigLIP), or `none`.
 */
export type ResizeMode = 'shorter' | 'longer' | 'exact' | 'none';

/** The resize modes, for parsing. */
export const RESIZE_MODES: readonly ResizeMode[] = ['shorter', 'longer', 'exact', 'none'];

/**
 * Resampling filter of a resize done as Pillow does it (`Image.resize`, which Hugging Face image
 * processors and torchvision on PIL images call): the filter's kernel widened by the scale when
 * downscaling, 8-bit fixed-point weights, a horizontal then a vertical pass (see image/resample.ts).
 */
export type ResampleFilter = 'nearest' | 'bilinear' | 'bicubic' | 'lanczos';

/** The resampling filters, for parsing. */
export const RESAMPLE_FILTERS: readonly ResampleFilter[] = ['nearest', 'bilinear', 'bicubic', 'lanczos'];

/**
 * How a centre crop's offset is rounded when the margin is odd: `round` as torchvision
 * (`round((H - h) / 2)`, halves to even), `floor` as Hugging Face (`(H - h) // 2`; a crop larger than
 * the image is padded `ceil((h - H) / 2)` before).
 */
export type CropRounding = 'round' | 'floor';

/** Everything needed to turn a decoded image into model input. Recorded in every report and cache key. */
export interface Preprocessing {
  /** Output height and width in pixels (the crop size). */
  height: number;
  width: number;
  /**
   * Shorter side after resizing, before the centre crop. Equal to max(height, width) means "no crop margin";
   * torchvision's usual eval transform is 256 for a 224 crop.
   */
  resizeShorter: number;
  /** 1 = greyscale, 3 = RGB. Images are converted to this many channels. */
  channels: 1 | 3;
  layout: TensorLayout;
  /** Per-channel mean and std applied to rescaled pixel values: (x * rescale - mean) / std. */
  mean: number[];
  std: number[];
  /** How to resize before the crop; `shorter` (with `resizeShorter`) when absent. */
  resizeMode?: ResizeMode;
  /** Longer side after resizing, for `resizeMode` `longer`. */
  resizeLonger?: number;
  /** Size after resizing, for `resizeMode` `exact`. */
  resizeWidth?: number;
  resizeHeight?: number;
  /**
   * Resampling filter, resized as Pillow does (within rounding of its 8-bit arithmetic). Absent: sharp's
   * `linear` kernel (libvips), dmlkit's historical pipeline, close to Pillow's bilinear on
   * downscaling (see image/transform.ts).
   */
  resample?: ResampleFilter;
  /** Centre-crop offset rounding; `round` (torchvision) when absent. */
  cropRounding?: CropRounding;
  /** Factor applied to 8-bit pixel values before normalisation; 1/255 when absent (0 or 1 for Hugging Face's do_rescale false). */
  rescale?: number;
}

/** Augmentation for training (the eval path never uses it). */
export interface TrainAugmentation {
  /** Random resized crop: area fraction range (torchvision default [0.08, 1]). */
  scale: [number, number];
  /** Random resized crop: aspect ratio range (torchvision default [3/4, 4/3]). */
  ratio: [number, number];
  /** Probability of a horizontal flip. */
  flipProbability: number;
}
