/**
 * @file One training batch up to its gradients: the random input choices of the batch (a view per
 * row for backbone features with augmented views, a crop and flip per row with `data.augmentation`),
 * the batch tensor, the forward pass in training mode, the loss and the gradients of the model's and
 * the loss's trainable variables. The optimiser step is the caller's (trainer.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import type { Preprocessing } from '../image/preprocessing.js';
import type { Rng } from '../util/rng.js';
import { applyBatchAugmentation, drawBatchAugmentation, type BatchAugmentation, type BatchAugmentationDraw } from './batch-augmentation.js';
import type { MetricLoss } from './losses/metric-loss.js';
import { batchTensor } from './run-inputs.js';
import type { TrainingData } from './training-data.js';

/** Random input choices of one batch. */
export interface InputDraw {
  views?: Int32Array;
  augmentation?: BatchAugmentationDraw;
}

/** What {@link batchStep} works with. */
export interface BatchStepContext {
  /** The TensorFlow.js model; undefined for a network the graph trainer trains as ONNX (then only `inputsOf` is used). */
  model: tf.LayersModel | undefined;
  loss: MetricLoss;
  trainData: TrainingData;
  /** The model's input shape without the batch axis. */
  inputShape: number[];
  /** The preprocessing of the training images (its size bounds the crop boxes). */
  preprocessing: Preprocessing;
  augmentation: BatchAugmentation | undefined;
  /** The variables to differentiate: the model's trainable weights and the loss's own. */
  variables: () => tf.Variable[];
}

/** The two functions of a training step for `context` (see the file comment). */
export function batchStep(context: BatchStepContext): {
  /** The random input choices of the batch `rows`, from the epoch's input generator. */
  drawInputs: (rows: Int32Array, rng: Rng) => InputDraw;
  /** The model input of the batch `rows` with its draw applied (the caller disposes it). */
  inputsOf: (rows: Int32Array, draw?: InputDraw) => tf.Tensor;
  /** Loss and gradients of the batch `rows` (the caller disposes them); `counts` receives the valid and total tuples. */
  gradientsOf: (rows: Int32Array, counts: { valid: number; total: number }, draw?: InputDraw) => { value: tf.Scalar; grads: tf.NamedTensorMap };
} {
  const { model, loss, trainData, inputShape, preprocessing, augmentation, variables } = context;
  const viewCount = 1 + trainData.augmentedViews.length;
  const fill = { fill: augmentation?.fill ?? 'black', mean: preprocessing.mean, std: preprocessing.std } as const;
  const drawInputs = (rows: Int32Array, rng: Rng): InputDraw => ({
    ...(viewCount > 1 ? { views: Int32Array.from(rows, () => rng.nextInt(viewCount)) } : {}),
    ...(augmentation ? { augmentation: drawBatchAugmentation(rows.length, preprocessing.height, preprocessing.width, augmentation, rng) } : {}),
  });
  const inputsOf = (rows: Int32Array, draw: InputDraw = {}): tf.Tensor => {
    let x = batchTensor(trainData, rows, inputShape, draw.views);
    if (draw.augmentation) {
      // Augment as NHWC images (trainData.inputShape), then back to the model's input shape (e.g. flat for an MLP).
      const { augmentation: boxes } = draw;
      const plain = x;
      x = tf.tidy(() => tf.reshape(applyBatchAugmentation(tf.reshape(plain, [rows.length, ...trainData.inputShape] as [number, number, number, number]) as tf.Tensor4D, boxes, fill), [rows.length, ...inputShape]));
      plain.dispose();
    }
    return x;
  };
  const gradientsOf = (rows: Int32Array, counts: { valid: number; total: number }, draw: InputDraw = {}): { value: tf.Scalar; grads: tf.NamedTensorMap } => {
    const labels = Int32Array.from(rows, (r) => trainData.labels[r] as number);
    const x = inputsOf(rows, draw);
    try {
      return tf.variableGrads(() => {
        if (!model) throw new DmlError('E_ARG', 'the batch step of a TensorFlow.js model was asked for a network trained as ONNX');
        const embeddings = model.apply(x, { training: true }) as tf.Tensor2D;
        const result = loss.compute(embeddings, labels);
        counts.valid = result.validCount;
        counts.total = result.totalCount;
        // Without a valid tuple the loss is a constant; keep the graph connected, then skip the update.
        return counts.valid > 0 ? result.loss : (tf.mul(tf.sum(embeddings), 0) as tf.Scalar);
      }, variables());
    } finally {
      x.dispose();
    }
  };
  return { drawInputs, inputsOf, gradientsOf };
}
