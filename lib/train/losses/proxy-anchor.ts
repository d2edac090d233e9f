/**
 * @file Proxy-Anchor loss (Kim, Kim, Cho and Kwak, "Proxy Anchor Loss for Deep Metric Learning",
 * CVPR 2020), as pytorch-metric-learning's `ProxyAnchorLoss`. One trainable proxy p_c per class;
 * with s(x, p) the cosine similarity of an embedding and a proxy, P⁺ the proxies of the classes in the
 * batch, X_c⁺ the batch's embeddings of class c and X_c⁻ the others:
 *
 *     ℓ = 1/|P⁺| Σ_{c ∈ P⁺} log(1 + Σ_{x ∈ X_c⁺} e^{−α (s(x, p_c) − δ)})
 *       + 1/|P|  Σ_{c ∈ P}  log(1 + Σ_{x ∈ X_c⁻} e^{ α (s(x, p_c) + δ)})
 *
 * Options (PML's names and defaults, which are the paper's): `numClasses` (required), `embeddingSize`
 * (default the model's), `margin` δ = 0.1, `alpha` α = 32; the proxies start as PML's and the paper's
 * code draw them, `kaiming_normal_(mode='fan_out')` (N(0, 2 / classes)), from `seed`. The paper trains
 * the proxies at 100x the network's learning rate (`learningRateScale: 100`; the default is 1).
 * Every embedding takes part: `validCount` = `totalCount` = the batch size.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { classTableFields } from './class-table.js';
import { ClassTableLoss } from './class-table-loss.js';
import { defineLoss, type LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import { maskedLogSumExp } from './masked-ops.js';
import type { LossOutput } from './metric-loss.js';

/** Options of `proxy-anchor`. */
export const proxyAnchorOptionsSchema = z.strictObject({
  ...classTableFields,
  /** δ, the margin (0.1). */
  margin: z.number().default(0.1),
  /** α, the scale (32). */
  alpha: z.number().positive().default(32),
});

/** Options as written in a config. */
export type ProxyAnchorOptions = z.input<typeof proxyAnchorOptionsSchema>;

/** Proxy-Anchor loss (see the file comment). */
export class ProxyAnchorLoss extends ClassTableLoss<z.output<typeof proxyAnchorOptionsSchema>> {
  constructor(options: ProxyAnchorOptions, context: LossContext = {}) {
    super('proxy-anchor', parseSpec(proxyAnchorOptionsSchema, options, 'loss'), context, 1, 'kaiming-normal-fan-out');
  }

  protected override tableLossOf(batch: LossBatch): LossOutput {
    const { embeddings, labels, size } = batch;
    const { margin, alpha, numClasses } = this.options;
    // [C, B]: each proxy's similarities to the batch.
    const similarities = tf.transpose(this.table.cosines(embeddings)) as tf.Tensor2D;
    const positive = tf.transpose(this.table.oneHot(labels)) as tf.Tensor2D;
    const proxiesWithPositives = new Set(labels).size;
    const positiveTerms = maskedLogSumExp(tf.mul(tf.sub(similarities, margin), -alpha), tf.cast(positive, 'bool') as tf.Tensor2D, true);
    const negativeTerms = maskedLogSumExp(tf.mul(tf.add(similarities, margin), alpha), tf.equal(positive, 0) as tf.Tensor2D, true);
    const loss = tf.add(tf.div(tf.sum(positiveTerms), proxiesWithPositives), tf.div(tf.sum(negativeTerms), numClasses)) as tf.Scalar;
    return { loss, validCount: size, totalCount: size };
  }
}

/** Registry entry: `proxy-anchor`. */
export const PROXY_ANCHOR_LOSS = defineLoss('proxy-anchor', proxyAnchorOptionsSchema, (options, context) => new ProxyAnchorLoss(options, context));
