/**
 * @file The easy-positive triplet family (paper 002: Xuan, Stylianou & Pless, "Improved Embeddings
 * with Easy Positive Triplet Mining", WACV 2020; docs/methods.md sections 1 and 2), as NCA losses with
 * temperature τ on cosine similarities, in the first- or second-order form of paper 000 (see nca.ts).
 * Per anchor a, with the selections of mining/anchor-selection.ts and `u` the exponents of nca.ts:
 *
 * | name    | positive | negative(s)           | loss of anchor a (order 1)                    |
 * |---------|----------|-----------------------|-----------------------------------------------|
 * | `ep`    | ep(a)    | all negatives         | `−S_ap/τ + logsumexp([S_ap] ∪ {S_an : N_an}/τ)` |
 * | `ephn`  | ep(a)    | hn(a)                 | `softplus((S_an − S_ap)/τ)`                    |
 * | `epshn` | ep(a)    | shn(a) (`S_an < S_ap`) | `softplus((S_an − S_ap)/τ)`                    |
 * | `epen`  | ep(a)    | en(a)                 | `softplus((S_an − S_ap)/τ)` (paper 000's diagnostic run) |
 * | `hp`    | hp(a)    | all negatives         | as `ep`                                        |
 * | `hphn`  | hp(a)    | hn(a)                 | as `ephn`                                      |
 *
 * Decisions on docs/methods.md section 10, each an option:
 * - Q1 `reduction`: `mean` over kept anchors (default; the authors' current code — scale the
 *   learning rate up by about B relative to the paper's) or `sum` (the paper-time code).
 * - Q2 `order`: 1 (default) or 2; τ divides both orders' exponents.
 * - Q3 `validity`: `exists` (default, paper-time code): an anchor is dropped only when it has no
 *   positive or no (semi-hard) negative; `positive-similarity` (the authors' HEAD code): also when the
 *   chosen positive's or negative's similarity is ≤ 0. For the all-negative variants the HEAD rule
 *   looks at the hardest negative.
 * - Q4 `semiHardRule` (`epshn` only): `strict` (default, paper) or `inclusive` (code);
 *   `duplicateThreshold`: positives with `S > 0.9999` are ignored (default, authors' code), `null`
 *   keeps them.
 *
 * Anchors of a class with a single image in the batch have no positive and are dropped; the image
 * still serves as a negative for the others. `validCount` counts the kept anchors, `totalCount` is B.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { invalidParameterError } from '../../errors.js';
import { DEFAULT_DUPLICATE_THRESHOLD, selectNegatives, selectPositives } from '../mining/anchor-selection.js';
import type { NegativeStrategy, PositiveStrategy } from '../mining/anchor-selection.js';
import { maskRows, pickColumns, selectRows } from '../similarity.js';
import { BaseMetricLoss } from './base-loss.js';
import { LossBatch } from './loss-batch.js';
import type { LossOutput } from './metric-loss.js';
import { ncaSetLosses, ncaTripletLosses } from './nca.js';
import { parseSpec } from '../../util/parse-spec.js';
import { reduceLosses, zeroLoss } from './reducers.js';
import { defineLoss } from './loss-entry.js';
import { ncaTripletGraphLoss, type NcaTripletConfig } from '../graph-loss.js';

/** The options every NCA loss of the family shares, with their defaults. */
export const ncaOptionsShape = {
  /** NCA temperature τ (paper 002: 0.1 in all experiments). */
  temperature: z.number().positive().default(0.1),
  /** 1: L1st; 2: L2nd of paper 000 (docs/methods.md Q2). */
  order: z.literal([1, 2]).default(1),
  /** Mean (default) or sum over kept anchors (docs/methods.md Q1). */
  reduction: z.enum(['mean', 'sum']).default('mean'),
  /** `exists` (default, paper-time code) or `positive-similarity` (HEAD code) (docs/methods.md Q3). */
  validity: z.enum(['exists', 'positive-similarity']).default('exists'),
};

/** When a tuple counts (docs/methods.md Q3). */
export type ValidityRule = 'exists' | 'positive-similarity';

/** Options of the mined variants. */
export const ncaTripletOptionsSchema = z.strictObject({
  ...ncaOptionsShape,
  /** Positives with `S > duplicateThreshold` are ignored; `null` keeps them (docs/methods.md Q4). */
  duplicateThreshold: z.number().nullable().default(DEFAULT_DUPLICATE_THRESHOLD),
});

/** Options of `epshn`: those of the other variants plus the semi-hard rule. */
export const semiHardNcaTripletOptionsSchema = ncaTripletOptionsSchema.extend({
  /** `strict`: `S_an < S_ap` (default, paper 002); `inclusive`: `S_an ≤ S_ap` (authors' code). */
  semiHardRule: z.enum(['strict', 'inclusive']).default('strict'),
});

/** The six mined variants. */
export type NcaTripletVariant = 'ep' | 'ephn' | 'epshn' | 'epen' | 'hp' | 'hphn';

/** Options as written in a config (every field optional). */
export type NcaTripletOptions = z.input<typeof semiHardNcaTripletOptionsSchema>;

const VARIANTS: Record<NcaTripletVariant, { positive: PositiveStrategy; negative: NegativeStrategy | 'all' }> = {
  ep: { positive: 'easy', negative: 'all' },
  ephn: { positive: 'easy', negative: 'hard' },
  epshn: { positive: 'easy', negative: 'semihard' },
  epen: { positive: 'easy', negative: 'easy' },
  hp: { positive: 'hard', negative: 'all' },
  hphn: { positive: 'hard', negative: 'hard' },
};

/** The names of the mined variants, in registry order. */
export const NCA_TRIPLET_VARIANTS = Object.keys(VARIANTS) as NcaTripletVariant[];

/** Whether a tuple with chosen positive and (hardest or chosen) negative similarities is kept. */
export function isValidTuple(rule: ValidityRule, positiveSimilarity: number, negativeSimilarity: number): boolean {
  return rule === 'exists' || (positiveSimilarity > 0 && negativeSimilarity > 0);
}

/** Per-anchor results of {@link NcaTripletLoss.anchorLosses}. */
export interface AnchorLosses {
  /** The kept anchors, ascending. */
  readonly anchors: Int32Array;
  /** The positive chosen for each kept anchor. */
  readonly positives: Int32Array;
  /**
   * The negative chosen for each kept anchor; for `ep` and `hp` (all negatives in the loss) the
   * hardest negative, which the `positive-similarity` validity rule looks at.
   */
  readonly negatives: Int32Array;
  /** [K] losses of the kept anchors; null when no anchor is kept. */
  readonly losses: tf.Tensor1D | null;
}

/** EP, EPHN, EPSHN, EPEN, HP and HPHN (see the file comment). */
export class NcaTripletLoss extends BaseMetricLoss<z.output<typeof semiHardNcaTripletOptionsSchema>> {
  declare readonly name: NcaTripletVariant;

  constructor(variant: NcaTripletVariant, options: NcaTripletOptions = {}) {
    if (!NCA_TRIPLET_VARIANTS.includes(variant)) {
      throw invalidParameterError('variant', `one of ${NCA_TRIPLET_VARIANTS.join(', ')}`, variant);
    }
    const schema = variant === 'epshn' ? semiHardNcaTripletOptionsSchema : ncaTripletOptionsSchema;
    const parsed = parseSpec(schema, options, 'loss');
    // The strict semi-hard rule is the default of EPHN-type variants without the option; not recorded as one.
    super(variant, { semiHardRule: 'strict', ...parsed }, parsed);
  }

  protected override lossOf(batch: LossBatch): LossOutput {
    const anchors = this.anchorLossesOf(batch);
    if (anchors.losses === null) return zeroLoss(batch.size);
    return { loss: reduceLosses(anchors.losses, this.options.reduction), validCount: anchors.anchors.length, totalCount: batch.size };
  }

  /**
   * The kept anchors, their selected positives and negatives, and their unreduced losses (what
   * `compute` reduces); the indices also give the `(S_ap, S_an)` points of paper 000's triplet scatter
   * diagram. Same calling rules as `compute`.
   */
  anchorLosses(embeddings: tf.Tensor2D, labels: Int32Array): AnchorLosses {
    return this.anchorLossesOf(new LossBatch(embeddings, labels));
  }

  private anchorLossesOf(batch: LossBatch): AnchorLosses {
    const { size, masks, similarities, values } = batch;
    const { temperature, order, validity, duplicateThreshold, semiHardRule } = this.options;
    const variant = VARIANTS[this.name];
    const positives = selectPositives(values, masks, { strategy: variant.positive, duplicateThreshold });
    const negatives = selectNegatives(values, masks, {
      strategy: variant.negative === 'all' ? 'hard' : variant.negative,
      positives,
      semiHardRule,
    });
    const kept: number[] = [];
    for (let a = 0; a < size; a++) {
      if (positives.index[a]! < 0 || negatives.index[a]! < 0) continue;
      if (isValidTuple(validity, positives.similarity[a]!, negatives.similarity[a]!)) kept.push(a);
    }
    const anchors = Int32Array.from(kept);
    const positive = Int32Array.from(kept, (a) => positives.index[a]!);
    const negative = Int32Array.from(kept, (a) => negatives.index[a]!);
    if (kept.length === 0) return { anchors, positives: positive, negatives: negative, losses: null };
    const rows = selectRows(similarities, anchors);
    const positiveSimilarities = pickColumns(rows, positive);
    const losses =
      variant.negative === 'all'
        ? ncaSetLosses(positiveSimilarities, rows, maskRows(masks.negative, size, anchors), order, temperature)
        : ncaTripletLosses(positiveSimilarities, pickColumns(rows, negative), order, temperature);
    return { anchors, positives: positive, negatives: negative, losses };
  }
}

/** Registry entries of the six mined variants (`epshn` also takes `semiHardRule`); `ephn`, `epen` and `hphn` also as ONNX nodes for the fused step (lib/train/graph-loss.ts). */
export const NCA_TRIPLET_LOSSES = [
  defineLoss('ep', ncaTripletOptionsSchema, (options) => new NcaTripletLoss('ep', options)),
  defineLoss('ephn', ncaTripletOptionsSchema, (options) => new NcaTripletLoss('ephn', options), (config) => ncaTripletGraphLoss('ephn', config as unknown as NcaTripletConfig)),
  defineLoss('epshn', semiHardNcaTripletOptionsSchema, (options) => new NcaTripletLoss('epshn', options)),
  defineLoss('epen', ncaTripletOptionsSchema, (options) => new NcaTripletLoss('epen', options), (config) => ncaTripletGraphLoss('epen', config as unknown as NcaTripletConfig)),
  defineLoss('hp', ncaTripletOptionsSchema, (options) => new NcaTripletLoss('hp', options)),
  defineLoss('hphn', ncaTripletOptionsSchema, (options) => new NcaTripletLoss('hphn', options), (config) => ncaTripletGraphLoss('hphn', config as unknown as NcaTripletConfig)),
] as const;
