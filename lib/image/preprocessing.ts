/**
 * @file Preprocessing settings: how an image becomes the Float32 tensor a model expects.
 */

/** Tensor memory layout of an image batch. */
export type TensorLayout = 'NCHW' | 'NHWC';

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
  /** Per-channel mean and std applied to pixel values scaled to [0, 1]: (x/255 - mean) / std. */
  mean: number[];
  std: number[];
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
