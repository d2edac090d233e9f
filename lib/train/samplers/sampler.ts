/**
 * @file Batch samplers for metric learning: batches of c classes × n images ("groups" of n), in the
 * three variants of docs/methods.md section 7 — `filled` (EPHN round-robin, see filled.ts), `sample` (one
 * truncated group per class, see truncated.ts) and `exact` (exactly n per class, with replacement for
 * small classes, see exact.ts); plus `pairing` (LoOp's Algorithm 1: n even, c distinct classes per
 * batch chosen by walking the images, see pairing.ts).
 *
 * An epoch is `repeat` rounds (each visits every eligible class once, in a fresh random order; a
 * `pairing` round is about one walk over the images instead), concatenated and cut into batches of
 * `batchSize` item indices; the last, shorter batch is kept unless `dropLast` (PyTorch's DataLoader
 * default, which the EPHN code uses, keeps it).
 *
 * Determinism and resuming: the batches of epoch e are a pure function of (labels, spec, seed, e) —
 * each epoch draws from its own generator `new Rng(epochSeed(seed, e))` — so a run resumed at
 * (epoch, batchIndex) continues with `batchesOfEpoch(epoch).slice(batchIndex)` and sees exactly the
 * batches the uninterrupted run would have seen.
 *
 * Small classes: classes with fewer than `minClassSize` images are left out of sampling (and counted
 * in {@link BatchSampler.describe}). The default is 2 for `filled`, `exact` and `pairing`, whose
 * groups would otherwise be n copies of one image (positives identical to their anchor), and 1 for
 * `sample`, which follows the EPHN code: a one-image class enters the batch as a negative for the
 * others, and the losses drop its anchor for lack of a positive.
 */
import { DmlError, invalidParameterError } from '../../errors.js';
import { groupByClass, type SamplerClass } from './classes.js';
import { epochRng } from './epoch-rng.js';
import { exactPlan } from './exact.js';
import { filledPlan, type FilledLengthRule } from './filled.js';
import { pairingPlan } from './pairing.js';
import type { RoundPlan } from './plan.js';
import { truncatedPlan } from './truncated.js';
import { checkBoolean, checkInteger } from '../../util/check.js';
import { z } from 'zod';
import { positiveIntegerField } from '../../util/zod-fields.js';

/** The sampler variants. */
export type SamplerKind = 'filled' | 'sample' | 'exact' | 'pairing';

/** Fields every variant has. */
interface SamplerSpecBase {
  /** n, images per class in a group; an integer >= 2. */
  groupSize: number;
  /** Images per batch, a multiple of `groupSize` with at least two groups (c = batchSize / groupSize classes). */
  batchSize: number;
  /** Rounds per epoch (every class visited once per round). Default 1. */
  repeat?: number | undefined;
  /** Drop the last batch of an epoch when it is shorter than `batchSize`. Default false. */
  dropLast?: boolean | undefined;
  /** Classes with fewer images are left out. Default 2 (`filled`, `exact`) or 1 (`sample`). */
  minClassSize?: number | undefined;
}

/** EPHN's filled round-robin sampler. */
export interface FilledSamplerSpec extends SamplerSpecBase {
  kind: 'filled';
  /** How the class length L is derived from the largest class (see filled.ts). Default `nearest`. */
  lengthRule?: FilledLengthRule | undefined;
}

/** EPHN's one-group-per-class sampler with truncation. */
export interface TruncatedSamplerSpec extends SamplerSpecBase {
  kind: 'sample';
}

/** Exactly n images per class. */
export interface ExactSamplerSpec extends SamplerSpecBase {
  kind: 'exact';
  /**
   * Pad classes smaller than n by drawing with replacement (default true). When false, every class
   * must have at least n images (raise `minClassSize` to n to leave smaller classes out instead).
   */
  replacement?: boolean | undefined;
}

/** LoOp's pairing sampler: `groupSize` even, every batch `batchSize / groupSize` distinct classes. */
export interface PairingSamplerSpec extends SamplerSpecBase {
  kind: 'pairing';
}

/** A sampler specification, as a config file or CLI gives it. */
export type SamplerSpec = FilledSamplerSpec | TruncatedSamplerSpec | ExactSamplerSpec | PairingSamplerSpec;

/** Everything that determines a sampler's batches, with defaults filled in, and its sizes. */
export interface SamplerDescription {
  kind: SamplerKind;
  seed: number;
  groupSize: number;
  batchSize: number;
  classesPerBatch: number;
  repeat: number;
  dropLast: boolean;
  minClassSize: number;
  /** Classes sampled from. */
  classes: number;
  /** Classes left out for having fewer than `minClassSize` images, and their images. */
  excludedClasses: number;
  excludedImages: number;
  imagesPerEpoch: number;
  batchesPerEpoch: number;
  /** Variant-specific facts (`classLength` of `filled`, how many classes were padded or truncated). */
  details: Record<string, number | string | boolean>;
}

/** A seeded, resumable batch sampler over a fixed label array. */
export interface BatchSampler {
  /** Images in one epoch's batches (after `dropLast`). */
  readonly imagesPerEpoch: number;
  readonly batchesPerEpoch: number;
  /** The batches of epoch `epoch` (an integer in [0, 2^32)), as item indices into the labels. */
  batchesOfEpoch(epoch: number): Int32Array[];
  /** The sampler's kind and batch shape, for logs and reports. */
  describe(): SamplerDescription;
  /**
   * Warnings about the configuration, one line each, for the caller to print and record (the sampler
   * prints nothing): a batch larger than the images sampled, whose batches then repeat images.
   */
  readonly warnings: readonly string[];
}

const KINDS: readonly SamplerKind[] = ['filled', 'sample', 'exact', 'pairing'];


/** How an error names class `code`: its name in quotes when `labelNames` has one (`class "bag"`), else `label 0`. */
function className(code: number, labelNames: readonly string[] | undefined): string {
  const name = labelNames?.[code];
  return name !== undefined ? `class ${JSON.stringify(name)}` : `label ${code}`;
}

/**
 * Creates the sampler `spec` describes over `labels` (one integer class label per training item),
 * seeded with `seed` (an integer in [0, 2^32)). `labelNames[code]` names the classes in errors (the
 * label codes otherwise).
 *
 * Errors: E_ARG for a bad spec field or seed, or (`exact` without replacement) a class smaller than
 * n; E_EMPTY when fewer than two classes remain after `minClassSize`, or when `dropLast` leaves no
 * batch.
 */
export function createSampler(spec: SamplerSpec, labels: Int32Array, seed: number, labelNames?: readonly string[]): BatchSampler {
  if (typeof spec !== 'object' || spec === null) throw invalidParameterError('sampler', 'an object', spec);
  if (!KINDS.includes(spec.kind)) throw invalidParameterError('sampler.kind', `one of ${KINDS.map((k) => `'${k}'`).join(', ')}`, spec.kind);
  if (!(labels instanceof Int32Array) || labels.length === 0) throw invalidParameterError('labels', 'a non-empty Int32Array', labels);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw invalidParameterError('seed', 'an integer in [0, 2^32)', seed);
  const n = checkInteger('sampler.groupSize', spec.groupSize, 2);
  const batchSize = spec.batchSize;
  if (!Number.isInteger(batchSize) || batchSize < 2 * n || batchSize % n !== 0) {
    throw invalidParameterError('sampler.batchSize', `a multiple of groupSize ${n} holding at least 2 groups (${2 * n}, ${3 * n}, ...)`, batchSize);
  }
  const repeat = checkInteger('sampler.repeat', spec.repeat ?? 1, 1);
  const dropLast = checkBoolean('sampler.dropLast', spec.dropLast ?? false);
  const minClassSize = checkInteger('sampler.minClassSize', spec.minClassSize ?? (spec.kind === 'sample' ? 1 : 2), 1);

  const all = groupByClass(labels);
  const classes = all.filter((c) => c.items.length >= minClassSize);
  if (classes.length < 2) {
    const small = all.filter((c) => c.items.length < minClassSize);
    const shown = small.slice(0, 3).map((c) => `${className(c.label, labelNames)} with ${c.items.length}`);
    const smallList = small.length === 0 ? '' : `; too small: ${shown.join(', ')}${small.length > shown.length ? ` and ${small.length - shown.length} more` : ''}`;
    throw new DmlError(
      'E_EMPTY',
      `The sampler needs at least 2 classes with at least ${minClassSize} image(s) each, but the labels have ${classes.length} (of ${all.length} classes)${smallList}`,
    );
  }

  let plan: RoundPlan;
  switch (spec.kind) {
    case 'filled': {
      const rule = spec.lengthRule ?? 'nearest';
      if (rule !== 'nearest' && rule !== 'up') throw invalidParameterError('sampler.lengthRule', "'nearest' or 'up'", rule);
      plan = filledPlan(classes, n, rule);
      break;
    }
    case 'sample':
      plan = truncatedPlan(classes, n);
      break;
    case 'exact': {
      const replacement = checkBoolean('sampler.replacement', spec.replacement ?? true);
      if (!replacement) {
        const smallest = classes.reduce((a, b) => (b.items.length < a.items.length ? b : a));
        if (smallest.items.length < n) {
          const count = classes.filter((c) => c.items.length < n).length;
          throw invalidParameterError(
            'sampler.groupSize',
            `at most ${smallest.items.length} when replacement is false (${count} class(es) have fewer images than groupSize, e.g. ${className(smallest.label, labelNames)} with ${smallest.items.length}; set replacement: true, or minClassSize: ${n} to leave them out)`,
            n,
          );
        }
      }
      plan = exactPlan(classes, n);
      break;
    }
    case 'pairing':
      if (n % 2 !== 0) throw invalidParameterError('sampler.groupSize', 'an even integer >= 2 (the pairing sampler pairs the images of a class)', n);
      if (classes.length < batchSize / n) {
        throw invalidParameterError(
          'sampler.batchSize',
          `at most groupSize × ${classes.length} (the pairing sampler puts batchSize / groupSize distinct classes in a batch, and ${classes.length} classes are sampled)`,
          batchSize,
        );
      }
      plan = pairingPlan(classes, n, batchSize);
      break;
  }

  const epochLength = plan.roundLength * repeat;
  const fullBatches = Math.floor(epochLength / batchSize);
  const batchesPerEpoch = dropLast ? fullBatches : Math.ceil(epochLength / batchSize);
  const imagesPerEpoch = dropLast ? fullBatches * batchSize : epochLength;
  if (batchesPerEpoch === 0) {
    throw new DmlError('E_EMPTY', `An epoch of the ${spec.kind} sampler holds ${epochLength} images, fewer than batchSize ${batchSize}, and dropLast leaves no batch`);
  }
  const excluded = all.filter((c) => c.items.length < minClassSize);
  const description: SamplerDescription = {
    kind: spec.kind,
    seed,
    groupSize: n,
    batchSize,
    classesPerBatch: batchSize / n,
    repeat,
    dropLast,
    minClassSize,
    classes: classes.length,
    excludedClasses: excluded.length,
    excludedImages: excluded.reduce((sum, c: SamplerClass) => sum + c.items.length, 0),
    imagesPerEpoch,
    batchesPerEpoch,
    details: { ...plan.details, ...(spec.kind === 'exact' ? { replacement: spec.replacement ?? true } : {}) },
  };

  const sampled = classes.reduce((sum, c) => sum + c.items.length, 0);
  const warnings =
    batchSize > sampled
      ? [`sampler.batchSize ${batchSize} is larger than the ${sampled} training images sampled: each batch repeats every image about ${(Math.min(batchSize, epochLength) / sampled).toFixed(1)} times; lower batchSize to at most ${sampled} or train on more images`]
      : [];

  return {
    imagesPerEpoch,
    batchesPerEpoch,
    warnings,
    batchesOfEpoch(epoch: number): Int32Array[] {
      if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0xffffffff) throw invalidParameterError('epoch', 'an integer in [0, 2^32)', epoch);
      const rng = epochRng(seed, epoch);
      const stream = new Int32Array(epochLength);
      for (let r = 0; r < repeat; r++) stream.set(plan.drawRound(rng), r * plan.roundLength);
      const batches: Int32Array[] = [];
      for (let b = 0; b < batchesPerEpoch; b++) batches.push(stream.slice(b * batchSize, Math.min((b + 1) * batchSize, epochLength)));
      return batches;
    },
    describe(): SamplerDescription {
      return { ...description, details: { ...description.details } };
    },
  };
}

/** The fields every sampler spec has, with their defaults. */
const samplerBaseShape = {
  groupSize: z.number().int().min(2),
  batchSize: positiveIntegerField,
  repeat: positiveIntegerField.default(1),
  dropLast: z.boolean().default(false),
  minClassSize: positiveIntegerField.optional(),
};

/**
 * The schema of a sampler spec as a training config gives it (`sampler`): c = batchSize / groupSize
 * classes x n = groupSize images (docs/methods.md section 7; `pairing`: LoOp's, section 3); `kind`
 * defaults to `exact`, and each kind takes its own options only.
 */
export const samplerSpecSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('filled'), ...samplerBaseShape, lengthRule: z.enum(['nearest', 'up']).optional() }),
  z.strictObject({ kind: z.literal('sample'), ...samplerBaseShape }),
  z.strictObject({ kind: z.literal('exact').default('exact'), ...samplerBaseShape, replacement: z.boolean().optional() }),
  z.strictObject({ kind: z.literal('pairing'), ...samplerBaseShape }),
]);
