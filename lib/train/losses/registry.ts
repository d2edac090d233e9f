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
 * | `direct-gradient`, `dg-triplet-euclidean`, `dg-triplet-cosine`, `dg-circle`, `dg-binomial-deviance`, `dg-ms`, `dg-dr-ms`, `dg-sct`, `dg-best` | direct gradients, paper 003 (direct-gradient.ts) | direction, pairWeight, tripletWeight (per name), tau 10, alpha 2, beta 10, base 0.5, epsilon 0.1, msRelative mean-others, orthogonalize negative, sc2Boundary circle, reduction mean, duplicateThreshold 0.9999 |
 * | `loop-triplet` | LoOp, paper 001 (loop.ts) | geometry arc, reduction mean, margin 0.1, negatives all |
 * | `loop-hphn` | LoOp | geometry arc, reduction mean, margin 0.1 |
 * | `loop-lifted` | LoOp | geometry arc, reduction mean, margin 0.1, negativeMin hard |
 * | `loop-ms` | LoOp | geometry arc, reduction mean, alpha 2, beta 50, base 0.5, epsilon -0.02 |
 * | `eps-triplet` | EPS, paper 004 (eps.ts) | margin 0.2, distance squared-euclidean, semiHardFallback random, duplicateThreshold 0.9999, seed 0 |
 * | `eps-margin` | EPS | margin 0.2, beta 1.2, learnBeta true, numClasses null, nu 0, cutoff 0.5, upperCutoff null, duplicateThreshold 0.9999, seed 0 |
 * | `eps-ms` | EPS | alpha 2, beta 50, base 1, epsilon 0.1, negativeThreshold hardest-positive, duplicateThreshold 0.9999 |
 */
import { z } from 'zod';
import { invalidParameterError } from '../../errors.js';
import { BatchAllLoss, batchAllOptionsSchema, type BatchAllOptions } from './batch-all.js';
import { ContrastiveLoss, contrastiveOptionsSchema, type ContrastiveOptions } from './contrastive.js';
import { DirectGradientLoss, directGradientOptionsSchema, type DirectGradientName, type DirectGradientOptions } from './direct-gradient.js';
import {
  EpsMarginLoss,
  epsMarginOptionsSchema,
  EpsMultiSimilarityLoss,
  epsMsOptionsSchema,
  EpsTripletLoss,
  epsTripletOptionsSchema,
  type EpsMarginOptions,
  type EpsMsOptions,
  type EpsTripletOptions,
} from './eps.js';
import {
  NcaTripletLoss,
  ncaTripletOptionsSchema,
  semiHardNcaTripletOptionsSchema,
  type NcaTripletOptions,
  type NcaTripletVariant,
} from './easy-positive.js';
import { LiftedStructureLoss, liftedStructureOptionsSchema, type LiftedStructureOptions } from './lifted-structure.js';
import { MarginLoss, marginOptionsSchema, type MarginOptions } from './margin.js';
import {
  LoopLoss,
  loopHphnOptionsSchema,
  loopLiftedOptionsSchema,
  loopMsOptionsSchema,
  loopTripletOptionsSchema,
  type LoopName,
  type LoopOptions,
} from './loop.js';
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
  directGradientOptionsSchema('direct-gradient').extend({ name: z.literal('direct-gradient') }),
  directGradientOptionsSchema('dg-triplet-euclidean').extend({ name: z.literal('dg-triplet-euclidean') }),
  directGradientOptionsSchema('dg-triplet-cosine').extend({ name: z.literal('dg-triplet-cosine') }),
  directGradientOptionsSchema('dg-circle').extend({ name: z.literal('dg-circle') }),
  directGradientOptionsSchema('dg-binomial-deviance').extend({ name: z.literal('dg-binomial-deviance') }),
  directGradientOptionsSchema('dg-ms').extend({ name: z.literal('dg-ms') }),
  directGradientOptionsSchema('dg-dr-ms').extend({ name: z.literal('dg-dr-ms') }),
  directGradientOptionsSchema('dg-sct').extend({ name: z.literal('dg-sct') }),
  directGradientOptionsSchema('dg-best').extend({ name: z.literal('dg-best') }),
  loopTripletOptionsSchema.extend({ name: z.literal('loop-triplet') }),
  loopHphnOptionsSchema.extend({ name: z.literal('loop-hphn') }),
  loopLiftedOptionsSchema.extend({ name: z.literal('loop-lifted') }),
  loopMsOptionsSchema.extend({ name: z.literal('loop-ms') }),
  epsTripletOptionsSchema.extend({ name: z.literal('eps-triplet') }),
  epsMarginOptionsSchema.extend({ name: z.literal('eps-margin') }),
  epsMsOptionsSchema.extend({ name: z.literal('eps-ms') }),
]);

/** A loss spec as written in a config: `name` and any of its options. */
export type LossSpec = z.input<typeof lossSpecSchema>;

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
  'direct-gradient': (options) => directGradient('direct-gradient', options),
  'dg-triplet-euclidean': (options) => directGradient('dg-triplet-euclidean', options),
  'dg-triplet-cosine': (options) => directGradient('dg-triplet-cosine', options),
  'dg-circle': (options) => directGradient('dg-circle', options),
  'dg-binomial-deviance': (options) => directGradient('dg-binomial-deviance', options),
  'dg-ms': (options) => directGradient('dg-ms', options),
  'dg-dr-ms': (options) => directGradient('dg-dr-ms', options),
  'dg-sct': (options) => directGradient('dg-sct', options),
  'dg-best': (options) => directGradient('dg-best', options),
  'loop-triplet': (options) => loop('loop-triplet', options),
  'loop-hphn': (options) => loop('loop-hphn', options),
  'loop-lifted': (options) => loop('loop-lifted', options),
  'loop-ms': (options) => loop('loop-ms', options),
  'eps-triplet': (options) => new EpsTripletLoss(options as EpsTripletOptions),
  'eps-margin': (options) => new EpsMarginLoss(options as EpsMarginOptions),
  'eps-ms': (options) => new EpsMultiSimilarityLoss(options as EpsMsOptions),
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

function directGradient(name: DirectGradientName, options: Record<string, unknown>): MetricLoss {
  return new DirectGradientLoss(name, options as DirectGradientOptions);
}

function loop(name: LoopName, options: Record<string, unknown>): MetricLoss {
  return new LoopLoss(name, options as LoopOptions);
}
