/**
 * @file ProxyNCA (Movshovitz-Attias, Toshev, Leung, Ioffe and Singh, "No Fuss Distance Metric
 * Learning using Proxies", ICCV 2017) as pytorch-metric-learning's `ProxyNCALoss` (its NCALoss over
 * the proxies), which is also the loss of ProxyNCA++ (Teh, DeVries and Taylor, "ProxyNCA++: Revisiting
 * and Revitalizing Proxy Neighborhood Component Analysis", ECCV 2020) with `softmaxScale` = 1/T:
 *
 *     ℓ = −(1/B) Σ_i log( e^{−s d²(x_i, p_{y_i})} / Σ_c e^{−s d²(x_i, p_c)} ),   d² = ‖x − p/‖p‖‖² = 2 − 2 cos
 *
 * on L2-normalised embeddings and proxies, s = `softmaxScale`. Options (PML's): `numClasses`
 * (required), `embeddingSize` (default the model's), `softmaxScale` 1 (ProxyNCA++'s T = 1/9 is 9);
 * proxies drawn N(0, 1) from `seed` (PML's default init).
 *
 * Where PML and the papers differ: the 2017 paper leaves the positive proxy out of the denominator and
 * does not normalise the proxies; PML (and ProxyNCA++) take the softmax over every proxy, normalised.
 * PML drops a row whose softmax underflows to 0; here the log-softmax has no underflow, so every row
 * counts. ProxyNCA++'s other parts (fast-moving proxies: `learningRateScale`, global max pooling,
 * layer norm) are not the loss's. Every embedding takes part: `validCount` = `totalCount` = B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { parseSpec } from '../../util/parse-spec.js';
import { classTableFields } from './class-table.js';
import { ClassTableLoss } from './class-table-loss.js';
import { defineLoss, type LossContext } from './loss-entry.js';
import type { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';

/** Options of `proxy-nca`. */
export const proxyNcaOptionsSchema = z.strictObject({
  ...classTableFields,
  /** s, the scale of the negative squared distances in the softmax (1; ProxyNCA++: 1/T = 9). */
  softmaxScale: z.number().positive().default(1),
});

/** Options as written in a config. */
export type ProxyNcaOptions = z.input<typeof proxyNcaOptionsSchema>;

/** ProxyNCA (see the file comment). */
export class ProxyNcaLoss extends ClassTableLoss<z.output<typeof proxyNcaOptionsSchema>> {
  constructor(options: ProxyNcaOptions, context: LossContext = {}) {
    super('proxy-nca', parseSpec(proxyNcaOptionsSchema, options, 'loss'), context, 1, 'normal');
  }

  protected override tableLossOf({ embeddings, labels }: LossBatch): LossOutput {
    // −s d² = −s (2 − 2 cos); the constant −2s does not change the softmax but is kept, as PML's distance has it.
    const logits = tf.mul(tf.sub(2, tf.mul(this.table.cosines(embeddings), 2)), -this.options.softmaxScale) as tf.Tensor2D;
    return this.classifierOutput(logits, this.table.oneHot(labels));
  }
}

/** Registry entry: `proxy-nca`. */
export const PROXY_NCA_LOSS = defineLoss('proxy-nca', proxyNcaOptionsSchema, (options, context) => new ProxyNcaLoss(options, context));
