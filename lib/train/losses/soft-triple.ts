/**
 * @file SoftTriple loss (Qian, Shang, Sun, Hu, Li and Jin, "SoftTriple Loss: Deep Metric Learning
 * Without Triplet Sampling", ICCV 2019) as pytorch-metric-learning's `SoftTripleLoss`: K centres w_{c,k}
 * per class; the similarity of an embedding to a class is the softmax-weighted mean of its cosine
 * similarities to the class's centres, and a softmax classifier with a small margin δ on it:
 *
 *     S_{i,c} = Σ_k softmax_k(cos(x_i, w_{c,k}) / γ) · cos(x_i, w_{c,k})
 *     ℓ = −(1/B) Σ_i log( e^{λ (S_{i,y_i} − δ)} / (e^{λ (S_{i,y_i} − δ)} + Σ_{c ≠ y_i} e^{λ S_{i,c}}) )
 *
 * Options (PML's names and defaults, the paper's values): `numClasses` (required), `embeddingSize`
 * (default the model's), `centersPerClass` K = 10, `la` λ = 20, `gamma` γ = 0.1, `margin` δ = 0.01; the
 * centres start as PML draws them, `kaiming_uniform_(a=√5)` on its [D, classes·K] table: U(±1/√(classes·K)),
 * from `seed`. Where PML differs from the paper: the paper adds a regulariser that merges similar
 * centres (τ = 0.2, ‖w_{c,k} − w_{c,k'}‖ summed over each class's pairs); PML leaves it out, and so does
 * this loss. Every embedding takes part: `validCount` = `totalCount` = B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { classTableFields } from './class-table.js';
import { ClassTableLoss } from './class-table-loss.js';
import { defineLoss, type LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';

/** Options of `soft-triple`. */
export const softTripleOptionsSchema = z.strictObject({
  ...classTableFields,
  /** K, centres per class (10). */
  centersPerClass: z.int().min(1).default(10),
  /** λ, the scale of the class similarities (20). */
  la: z.number().positive().default(20),
  /** γ, the temperature of the softmax over a class's centres (0.1). */
  gamma: z.number().positive().default(0.1),
  /** δ, the margin on the true class (0.01). */
  margin: z.number().default(0.01),
});

/** Options as written in a config. */
export type SoftTripleOptions = z.input<typeof softTripleOptionsSchema>;

/** SoftTriple (see the file comment). */
export class SoftTripleLoss extends ClassTableLoss<z.output<typeof softTripleOptionsSchema>> {
  constructor(options: SoftTripleOptions, context: LossContext = {}) {
    const parsed = parseSpec(softTripleOptionsSchema, options, 'loss');
    super('soft-triple', parsed, context, parsed.centersPerClass, 'kaiming-uniform');
  }

  protected override tableLossOf({ embeddings, labels, size }: LossBatch): LossOutput {
    const { la, gamma, margin, numClasses, centersPerClass } = this.options;
    const toCentres = tf.reshape(this.table.cosines(embeddings), [size, numClasses, centersPerClass]);
    const toClasses = tf.sum(tf.mul(tf.softmax(tf.div(toCentres, gamma)), toCentres), 2) as tf.Tensor2D;
    const oneHot = this.table.oneHot(labels);
    return this.classifierOutput(tf.mul(tf.sub(toClasses, tf.mul(oneHot, margin)), la) as tf.Tensor2D, oneHot);
  }
}

/** Registry entry: `soft-triple`. */
export const SOFT_TRIPLE_LOSS = defineLoss('soft-triple', softTripleOptionsSchema, (options, context) => new SoftTripleLoss(options, context));
