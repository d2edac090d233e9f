/**
 * @file The loss registry: the one list of every loss (each loss file defines its entries, see
 * loss-entry.ts; adding a loss is its file plus one line in {@link LOSSES}). From it come
 * `lossSpecSchema`, which describes every loss by name with its options and their defaults, and
 * `createLoss`, which builds the {@link MetricLoss} a spec names. A spec is flat:
 * `{ name: 'epshn', temperature: 0.1, order: 2 }`; omitted options take the defaults documented on
 * each loss (and recorded in the loss's `config`).
 *
 * | name | family (file) | options (defaults) |
 * |------|---------------|--------------------|
 * | `ep`, `ephn`, `epen`, `hp`, `hphn` | easy-positive NCA (easy-positive.ts) | temperature 0.1, order 1, reduction mean, validity exists, duplicateThreshold 0.9999 |
 * | `epshn` | easy-positive NCA | the same plus semiHardRule strict |
 * | `batch-all` | NTXent-style BA (batch-all.ts) | temperature 0.1, order 1, reduction mean, validity exists |
 * | `npair` | Sohn's N-pair (n-pair.ts) | temperature 0.1, order 1, reduction mean, validity exists |
 * | `triplet-margin` | triplet-margin.ts | margin 0.05, distance euclidean, miner none (or all, hard, semihard, batch-hard), minerMargin null |
 * | `contrastive` | contrastive.ts | posMargin 0, negMargin 1, miner null (mining/pair-miner.ts) |
 * | `multi-similarity` | multi-similarity.ts | alpha 2, beta 50, base 0.5, miner multi-similarity, epsilon 0.1, reduction all-rows |
 * | `lifted-structure` | lifted-structure.ts | negMargin 1, posMargin 0 |
 * | `margin` | margin.ts | margin 0.2, beta 1.2, learnBeta false, numClasses null, nu 0, learningRateScale 1, weightDecay 0 |
 * | `direct-gradient`, `dg-triplet-euclidean`, `dg-triplet-cosine`, `dg-circle`, `dg-binomial-deviance`, `dg-ms`, `dg-dr-ms`, `dg-sct`, `dg-best` | direct gradients, paper 003 (direct-gradient.ts) | direction, pairWeight, tripletWeight (per name), tau 10, alpha 2, beta 10, base 0.5, epsilon 0.1, msRelative mean-others, orthogonalize negative, sc2Boundary circle, reduction mean, duplicateThreshold 0.9999 |
 * | `loop-triplet` | LoOp, paper 001 (loop.ts) | geometry arc, reduction mean, margin 0.1, negatives all |
 * | `loop-hphn` | LoOp | geometry arc, reduction mean, margin 0.1 |
 * | `loop-lifted` | LoOp | geometry arc, reduction mean, margin 0.1, negativeMin hard |
 * | `loop-ms` | LoOp | geometry arc, reduction mean, alpha 2, beta 50, base 0.5, epsilon -0.02 |
 * | `eps-triplet` | EPS, paper 004 (eps.ts) | margin 0.2, distance squared-euclidean, semiHardFallback random, duplicateThreshold 0.9999, seed 0 |
 * | `eps-margin` | EPS | margin 0.2, beta 1.2, learnBeta true, numClasses null, nu 0, learningRateScale 1, weightDecay 0, cutoff 0.5, upperCutoff null, duplicateThreshold 0.9999, seed 0 |
 * | `eps-ms` | EPS | alpha 2, beta 50, base 1, epsilon 0.1, negativeThreshold hardest-positive, duplicateThreshold 0.9999 |
 * | `proxy-anchor` | Proxy-Anchor (proxy-anchor.ts) | numClasses (required), embeddingSize (the model's), margin 0.1, alpha 32, seed 0, learningRateScale 1, weightDecay 0 |
 * | `proxy-nca` | ProxyNCA, ProxyNCA++ (proxy-nca.ts) | numClasses, embeddingSize, seed, learningRateScale, weightDecay as above; softmaxScale 1 |
 * | `normalized-softmax` | Normalized Softmax (normalized-softmax.ts) | the class-table options; temperature 0.05 |
 * | `arcface`, `cosface`, `subcenter-arcface` | additive-margin softmax (angular-margin.ts) | the class-table options; margin 28.6 (degrees) / 0.35 / 28.6, scale 64, subCenters 3 |
 * | `soft-triple` | SoftTriple (soft-triple.ts) | the class-table options; centersPerClass 10, la 20, gamma 0.1, margin 0.01 |
 * | `circle` | Circle loss, pair form (circle.ts) | m 0.4, gamma 80, miner null |
 * | `supcon` | supervised contrastive (supcon.ts) | temperature 0.1, miner null |
 * | `fast-ap` | FastAP (fast-ap.ts) | numBins 10 |
 *
 * The losses with a class table (proxies, class weights) train it beside the network as
 * parameter-options.ts says (`learningRateScale`, `weightDecay`). `contrastive`, `multi-similarity`,
 * `triplet-margin`, `circle` and `supcon` also take `memory` (null; a cross-batch memory,
 * cross-batch-memory.ts).
 */
import { z } from 'zod';
import { invalidParameterError } from '../../errors.js';
import { BATCH_ALL_LOSS } from './batch-all.js';
import { CONTRASTIVE_LOSS } from './contrastive.js';
import { DIRECT_GRADIENT_LOSSES } from './direct-gradient.js';
import { NCA_TRIPLET_LOSSES } from './easy-positive.js';
import { EPS_LOSSES } from './eps.js';
import { LIFTED_STRUCTURE_LOSS } from './lifted-structure.js';
import type { LossContext, LossEntry } from './loss-entry.js';
import { LOOP_LOSSES } from './loop.js';
import { MARGIN_LOSS } from './margin.js';
import type { MetricLoss } from './metric-loss.js';
import { MULTI_SIMILARITY_LOSS } from './multi-similarity.js';
import { N_PAIR_LOSS } from './n-pair.js';
import { PROXY_ANCHOR_LOSS } from './proxy-anchor.js';
import { PROXY_NCA_LOSS } from './proxy-nca.js';
import { NORMALIZED_SOFTMAX_LOSS } from './normalized-softmax.js';
import { ANGULAR_MARGIN_LOSSES } from './angular-margin.js';
import { SOFT_TRIPLE_LOSS } from './soft-triple.js';
import { CIRCLE_LOSS } from './circle.js';
import { SUPCON_LOSS } from './supcon.js';
import { FAST_AP_LOSS } from './fast-ap.js';
import { TRIPLET_MARGIN_LOSS } from './triplet-margin.js';
import type { GraphLoss } from '../../engine/graph-trainer/graph-trainer.js';

/** Every loss, in registry order. */
const LOSSES = [
  ...NCA_TRIPLET_LOSSES,
  BATCH_ALL_LOSS,
  N_PAIR_LOSS,
  TRIPLET_MARGIN_LOSS,
  CONTRASTIVE_LOSS,
  MULTI_SIMILARITY_LOSS,
  LIFTED_STRUCTURE_LOSS,
  MARGIN_LOSS,
  ...DIRECT_GRADIENT_LOSSES,
  ...LOOP_LOSSES,
  ...EPS_LOSSES,
  PROXY_ANCHOR_LOSS,
  PROXY_NCA_LOSS,
  NORMALIZED_SOFTMAX_LOSS,
  ...ANGULAR_MARGIN_LOSSES,
  SOFT_TRIPLE_LOSS,
  CIRCLE_LOSS,
  SUPCON_LOSS,
  FAST_AP_LOSS,
] as const;

/** Every loss spec: `name` plus that loss's options, each with its default. */
export const lossSpecSchema = z.discriminatedUnion('name', [LOSSES[0].spec, ...LOSSES.slice(1).map((entry) => entry.spec)]);

/** A loss spec as written in a config: `name` and any of its options. */
export type LossSpec = z.input<typeof lossSpecSchema>;

/**
 * The training config's `loss`: a name and the loss's options as written, typed as a {@link LossSpec}.
 * The config records them as written and {@link createLoss} checks them when the run starts (its
 * errors name `loss.<option>`); the loss fills its defaults in its `config`.
 */
export const configLossSchema = z.custom<LossSpec>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value) && 'name' in value && typeof value.name === 'string',
  { message: 'expected an object with a loss name, e.g. {"name": "ephn"}' },
);

/** The registered loss names. */
export type LossName = LossSpec['name'];

const BY_NAME: ReadonlyMap<string, LossEntry> = new Map(LOSSES.map((entry) => [entry.name, entry]));

/** The registered loss names, in registry order. */
export const LOSS_NAMES: readonly LossName[] = LOSSES.map((entry) => entry.name);

/**
 * Builds the loss a spec names, validating its options (a bad option is a DmlError `E_ARG` naming
 * `loss.<option>`; an unknown name lists the known ones). `context` gives what the run knows (the
 * model's embedding dimension, the default of a proxy loss's `embeddingSize`).
 *
 * @example
 * const loss = createLoss({ name: 'epshn', order: 2 });
 * const { loss: value, validCount } = tf.tidy(() => loss.compute(normalizeEmbeddings(x), labels));
 */
export function createLoss(spec: LossSpec, context: LossContext = {}): MetricLoss {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    throw invalidParameterError('loss', 'an object with a name and options', spec);
  }
  const { name, ...options }: { name: unknown } = spec;
  const entry = typeof name === 'string' ? BY_NAME.get(name) : undefined;
  if (entry === undefined) throw invalidParameterError('loss.name', `one of ${LOSS_NAMES.join(', ')}`, name);
  return entry.create(options, context);
}

/**
 * What is wrong with a loss spec as a config writes it, each problem with its path inside the spec
 * (`['name']`, `['margin']`); empty when {@link createLoss} accepts it. The training config reports
 * these with its other problems, so a file's every problem comes in one message.
 */
export function lossSpecProblems(spec: LossSpec): { path: PropertyKey[]; message: string }[] {
  const entry = BY_NAME.get(spec.name);
  if (entry === undefined) return [{ path: ['name'], message: `expected one of ${LOSS_NAMES.join(', ')} but received ${JSON.stringify(spec.name)}` }];
  return (entry.spec.safeParse(spec).error?.issues ?? []).map((issue) => ({ path: issue.path, message: issue.message }));
}

/** `loss` as ONNX nodes for the graph trainer's fused step (its entry's `graph`), or undefined when it has no such form (it keeps the two-run step). */
export function graphLossOf(loss: MetricLoss): GraphLoss | undefined {
  return BY_NAME.get(loss.name)?.graph?.(loss.config);
}
