/**
 * @file The batch-normalisation layer of dmlkit's model builders: tfjs-layers' BatchNormalization,
 * whose training-mode pass runs as one fused operation with a closed-form gradient
 * (ops/batch-norm-training.ts) on a backend that registers its kernels (ort-cpu). Everywhere else,
 * and in inference, it is the stock layer's code; the trainer's parity specs hold the two to the same
 * outputs, moving statistics and gradients.
 *
 * The class reports tfjs's class name `BatchNormalization`, so a saved model.json and the ONNX
 * exporter see the stock layer; it is not registered for deserialisation (a reloaded model gets the
 * stock layer, which computes the same function in other rounding). A resumed training run therefore
 * loads its checkpoint's weights into a freshly built model (checkpoint-io.ts, `into`).
 */
import * as tf from '@tensorflow/tfjs';
import { batchNormInTraining, hasFusedBatchNormTraining } from '../../engine/tfjs/ops/batch-norm-training.js';

/** Arguments of tfjs-layers' BatchNormalization. */
export type BatchNormalizationArgs = NonNullable<Parameters<typeof tf.layers.batchNormalization>[0]>;

type StockBatchNormalization = ReturnType<typeof tf.layers.batchNormalization>;

/** tfjs-layers' BatchNormalization class, which the public API exposes only through its serialisation map. */
const StockBatchNormalization = tf.serialization.SerializationMap.getMap().classNameMap['BatchNormalization']?.[0] as
  | (new (args?: BatchNormalizationArgs) => StockBatchNormalization)
  | undefined;
if (StockBatchNormalization === undefined) throw new Error('tfjs-layers registered no BatchNormalization class');

/** The stock layer's (TypeScript-private) fields that the fused pass reads and updates. */
interface BatchNormalizationFields {
  readonly axis: number;
  readonly momentum: number;
  readonly epsilon: number;
  readonly gamma: tf.LayerVariable | null;
  readonly beta: tf.LayerVariable | null;
  readonly movingMean: tf.LayerVariable;
  readonly movingVariance: tf.LayerVariable;
}

/** BatchNormalization with a fused training pass where the backend supports it (see the file comment). */
export class TrainingBatchNormalization extends StockBatchNormalization {
  static className = 'BatchNormalization';

  override call(inputs: tf.Tensor | tf.Tensor[], kwargs: Record<string, unknown>): tf.Tensor | tf.Tensor[] {
    const input = Array.isArray(inputs) ? (inputs.length === 1 ? inputs[0] : undefined) : inputs;
    const fields = this as unknown as BatchNormalizationFields;
    const usesFusedPass =
      kwargs['training'] === true &&
      input !== undefined &&
      input.dtype === 'float32' &&
      (fields.axis === -1 || fields.axis === input.rank - 1) &&
      fields.gamma !== null &&
      fields.beta !== null &&
      hasFusedBatchNormTraining();
    if (!usesFusedPass) return super.call(inputs, kwargs);
    return tf.tidy(() => {
      const gamma = (fields.gamma as tf.LayerVariable).read() as tf.Tensor1D;
      const beta = (fields.beta as tf.LayerVariable).read() as tf.Tensor1D;
      const { y, mean, variance } = batchNormInTraining(input, gamma, beta, fields.epsilon);
      // The moving statistics as the stock layer updates them: moving -= (moving - batch) · (1 - momentum).
      const decay = 1 - fields.momentum;
      for (const [moving, batch] of [
        [fields.movingMean, mean],
        [fields.movingVariance, variance],
      ] as const) {
        tf.tidy(() => {
          const old = moving.read();
          moving.write(tf.sub(old, tf.mul(tf.sub(old, batch), decay)));
        });
      }
      tf.dispose([mean, variance]);
      return y;
    });
  }
}

/** A {@link TrainingBatchNormalization} layer (what `tf.layers.batchNormalization(args)` builds, plus the fused pass). */
export function batchNormalization(args: BatchNormalizationArgs): TrainingBatchNormalization {
  return new TrainingBatchNormalization(args);
}
