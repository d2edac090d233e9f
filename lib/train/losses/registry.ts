/**
 * @file The loss registry: `lossSpecSchema` describes every loss by name with its options and their
 * defaults (the trainer's config embeds it), and `createLoss` builds the {@link MetricLoss} a spec
 * names. A spec is flat: `{ name: 'epshn', temperature: 0.1, order: 2 }`; omitted options take the
 * defaults documented on each loss (and recorded in the loss's `config`).
 *
 * | name | family (file) | options (defaults) |
 * |------|---------------|--------------------|
 * | `ep`, `ephn`, `epen`, `hp`, `hphn` | easy-positive NCA (easy-positive.ts) | temperature 0.1, order 1, reduction mean, validity exists, duplicateThreshold 0.9999 |
 * | `epshn` | easy-positive NCA | the same plus semiHardRule strict |
 * | `batch-all` | NTXent-style BA (batch-all.ts) | temperature 0.1, order 1, reduction mean, validity exists |
 * | `npair` | Sohn's N-pair (n-pair.ts) | temperature 0.1, order 1, reduction mean, validity exists |
 * | `triplet-margin` | triplet-margin.ts | margin 0.05, distance euclidean, miner none, minerMargin null |
 * | `contrastive` | contrastive.ts | posMargin 0, negMargin 1 |
 * | `multi-similarity` | multi-similarity.ts | alpha 2, beta 50, base 0.5, miner multi-similarity, epsilon 0.1, reduction all-rows |
 * | `lifted-structure` | lifted-structure.ts | negMargin 1, posMargin 0 |
 * | `margin` | margin.ts | margin 0.2, beta 1.2, learnBeta false, numClasses null, nu 0 |
 */
import { z } from 'zod';
import { invalidParameterError } from '../../errors.js';
import { BatchAllLoss, batchAllOptionsSchema, type BatchAllOptions } from './batch-all.js';
import { ContrastiveLoss, contrastiveOptionsSchema, type ContrastiveOptions } from './contrastive.js';
import {
  NcaTripletLoss,
  ncaTripletOptionsSchema,
  semiHardNcaTripletOptionsSchema,
  type NcaTripletOptions,
  type NcaTripletVariant,
} from './easy-positive.js';
import { LiftedStructureLoss, liftedStructureOptionsSchema, type LiftedStructureOptions } from './lifted-structure.js';
import { MarginLoss, marginOptionsSchema, type MarginOptions } from './margin.js';
import type { MetricLoss } from './metric-loss.js';
import { MultiSimilarityLoss, multiSimilarityOptionsSchema, type MultiSimilarityOptions } from './multi-similarity.js';
import { NPairLoss, nPairOptionsSchema, type NPairOptions } from './n-pair.js';
import { TripletMarginLoss, tripletMarginOptionsSchema, type TripletMarginOptions } from './triplet-margin.js';

/** Every loss spec: `name` plus that loss's options, each with its default. */
export const lossSpecSchema = z.discriminatedUnion('name', [
  ncaTripletOptionsSchema.extend({ name: z.literal('ep') }),
  ncaTripletOptionsSchema.extend({ name: z.literal('ephn') }),
  semiHardNcaTripletOptionsSchema.extend({ name: z.literal('epshn') }),
  ncaTripletOptionsSchema.extend({ name: z.literal('epen') }),
  ncaTripletOptionsSchema.extend({ name: z.literal('hp') }),
  ncaTripletOptionsSchema.extend({ name: z.literal('hphn') }),
  batchAllOptionsSchema.extend({ name: z.literal('batch-all') }),
  nPairOptionsSchema.extend({ name: z.literal('npair') }),
  tripletMarginOptionsSchema.extend({ name: z.literal('triplet-margin') }),
  contrastiveOptionsSchema.extend({ name: z.literal('contrastive') }),
  multiSimilarityOptionsSchema.extend({ name: z.literal('multi-similarity') }),
  liftedStructureOptionsSchema.extend({ name: z.literal('lifted-structure') }),
  marginOptionsSchema.extend({ name: z.literal('margin') }),
]);

/** A loss spec as written in a config: `name` and any of its options. */
export type LossSpec = z.input<typeof lossSpecSchema>;

/** A loss spec with every option filled in (what `lossSpecSchema.parse` returns). */
export type ResolvedLossSpec = z.output<typeof lossSpecSchema>;

/** The registered loss names. */
export type LossName = LossSpec['name'];

const FACTORIES: Record<LossName, (options: Record<string, unknown>) => MetricLoss> = {
  ep: (options) => ncaTriplet('ep', options),
  ephn: (options) => ncaTriplet('ephn', options),
  epshn: (options) => ncaTriplet('epshn', options),
  epen: (options) => ncaTriplet('epen', options),
  hp: (options) => ncaTriplet('hp', options),
  hphn: (options) => ncaTriplet('hphn', options),
  'batch-all': (options) => new BatchAllLoss(options as BatchAllOptions),
  npair: (options) => new NPairLoss(options as NPairOptions),
  'triplet-margin': (options) => new TripletMarginLoss(options as TripletMarginOptions),
  contrastive: (options) => new ContrastiveLoss(options as ContrastiveOptions),
  'multi-similarity': (options) => new MultiSimilarityLoss(options as MultiSimilarityOptions),
  'lifted-structure': (options) => new LiftedStructureLoss(options as LiftedStructureOptions),
  margin: (options) => new MarginLoss(options as MarginOptions),
};

/** The registered loss names, in registry order. */
export const LOSS_NAMES = Object.keys(FACTORIES) as LossName[];

/**
 * Builds the loss a spec names, validating its options (a bad option is a DmlError `E_ARG` naming
 * `loss.<option>`; an unknown name lists the known ones).
 *
 * @example
 * const loss = createLoss({ name: 'epshn', order: 2 });
 * const { loss: value, validCount } = tf.tidy(() => loss.compute(normalizeEmbeddings(x), labels));
 */
export function createLoss(spec: LossSpec): MetricLoss {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    throw invalidParameterError('loss', 'an object with a name and options', spec);
  }
  const { name, ...options } = spec as Record<string, unknown>;
  if (typeof name !== 'string' || !Object.hasOwn(FACTORIES, name)) {
    throw invalidParameterError('loss.name', `one of ${LOSS_NAMES.join(', ')}`, name);
  }
  return FACTORIES[name as LossName](options);
}

function ncaTriplet(variant: NcaTripletVariant, options: Record<string, unknown>): MetricLoss {
  return new NcaTripletLoss(variant, options as NcaTripletOptions);
}
