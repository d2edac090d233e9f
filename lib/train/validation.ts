/**
 * @file Validation of a training run at the end of an epoch (or every `validation.everySteps` steps of a `steps` run): the held-out sample embedded with the
 * current model and scored by the evaluator (Recall@K, MAP@R, NMI, the NMI curve over
 * `validation.clusterCounts` and NMI+), and on scatter epochs the triplet scatter diagram of the
 * validation or training set (with the LoOp series for LoOp losses), written to `<out>/scatter/`.
 */
import { evaluateEmbeddings } from '../eval/evaluate-embeddings.js';
import { DmlError } from '../errors.js';
import { GEM_DEFAULT_P } from '../engine/graph/embedding-network.js';
import { DEFAULT_INDEX } from '../eval/evaluation.js';
import { writeScatterFiles } from './scatter-files.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { tripletScatter } from './scatter.js';
import type { EpochRecord } from './epoch-record.js';
import type { TrainingData } from './training-data.js';
import { z } from 'zod';
import { positiveIntegerField } from '../util/zod-fields.js';
import { clusterCountSpecsSchema } from '../eval/cluster-counts.js';
import { KMEANS_INITS } from '../metrics/kmeans-options.js';

/** The fields of a run's configuration that validation reads (the training config has them). */
export interface ValidationSettings {
  readonly validation: z.infer<typeof validationSpecSchema>;
  readonly scatter: { readonly every: number; readonly set: 'train' | 'validation'; readonly maxPoints: number };
  readonly seed: number;
  /** For the message of an embedding that overflows: the settings that scale it. */
  readonly model: { readonly kind: string; readonly head?: { readonly pooling?: string | undefined; readonly gemP?: number | undefined } | undefined };
  readonly data: { readonly image?: { readonly mean?: readonly number[] | undefined; readonly std?: readonly number[] | undefined; readonly rescale?: number | undefined } | undefined };
}

/** What validation needs of a run, fixed for its whole length. */
export interface ValidationContext {
  config: ValidationSettings;
  /** The run folder (absolute). */
  out: string;
  /** The held-out sample, or undefined when the dataset holds no held-out items (then nothing is validated). */
  validationData: TrainingData | undefined;
  trainData: TrainingData;
  /** The geometry of the LoOp series of the scatter diagram when the loss is a LoOp loss. */
  loopGeometry: 'arc' | 'segment' | undefined;
}

/**
 * Where a run is validated: after epoch `index` (an `epochs` run) or after global step `index` (a
 * `steps` run, every `validation.everySteps` steps); `ordinal` counts the validation points from 0 (the
 * untrained model), `last` marks the end of the run.
 */
export interface ValidationPoint {
  unit: 'epoch' | 'step';
  index: number;
  ordinal: number;
  last: boolean;
}

/**
 * Validates the model, whose embeddings of a set `embed` gives, at `point` when the config asks for it (an `epochs` run: every `validation.every`
 * epochs, epoch 0 and the last; a `steps` run: at every point), filling `record.validation` and, on
 * scatter points (every `scatter.every`-th point, and the last), `record.scatter`.
 */
export async function validateEpoch(context: ValidationContext, embed: (data: TrainingData) => Promise<EmbeddingSet>, point: ValidationPoint, record: EpochRecord): Promise<void> {
  const { config, out, validationData, trainData, loopGeometry } = context;
  if (!validationData) return;
  const { last, ordinal } = point;
  if (point.unit === 'epoch' && ordinal % config.validation.every !== 0 && !last && ordinal !== 0) return;
  const set = await embed(validationData);
  const bad = set.vectors.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) {
    const gem = config.model.kind === 'onnx' && config.model.head?.pooling === 'gem' ? `model.head.gemP ${config.model.head.gemP ?? GEM_DEFAULT_P}, ` : '';
    throw new DmlError(
      'E_NUMERIC',
      `The ${point.index === 0 ? 'untrained ' : ''}model's embedding of held-out image ${set.ids[Math.floor(bad / set.dim)]} holds ${set.vectors[bad]} at ${point.unit} ${point.index}: a value overflows float32 in the network; check the settings that scale it (${gem}data.image mean ${JSON.stringify(config.data.image?.mean ?? null)}, std ${JSON.stringify(config.data.image?.std ?? null)} and rescale ${config.data.image?.rescale ?? '1/255'})`,
    );
  }
  const { metrics } = await evaluateEmbeddings(set, null, {
    ks: config.validation.ks,
    clusterCounts: config.validation.clusterCounts,
    clusterSet: 'union',
    index: DEFAULT_INDEX,
    kmeans: { seed: config.seed, ...(config.validation.kmeansInit !== undefined ? { init: config.validation.kmeansInit } : {}) },
  });
  record.validation = {
    recall: metrics.recall,
    mapAtR: metrics.mapAtR,
    nmi: metrics.nmi,
    nmiCurve: metrics.nmiCurve.map((p) => ({ clusters: p.clusters, nmi: p.nmi })),
    nmiPlus: metrics.nmiPlus,
    queryCount: metrics.queryCount,
  };
  if (ordinal % config.scatter.every === 0 || last) {
    const source = config.scatter.set === 'validation' ? set : await embed(trainData);
    const scatter = tripletScatter(source.vectors, source.count, source.dim, source.labels, {
      maxPoints: config.scatter.maxPoints,
      seed: config.seed,
      ...(loopGeometry !== undefined ? { loop: { geometry: loopGeometry } } : {}),
    });
    record.scatter = {
      correctFraction: scatter.correctFraction,
      points: scatter.points.length,
      ...(scatter.loop ? { loopCorrectFraction: scatter.loop.correctFraction } : {}),
    };
    await writeScatterFiles(out, point.index, scatter, config.scatter.set, point.unit);
  }
}

/** The training config's `validation`: when and how the held-out items are scored. */
export const validationSpecSchema = z
  .object({
    /** Validate every this many epochs (and after the last); an `epochs` run. */
    every: positiveIntegerField.default(1),
    /**
     * A `steps` run: validate and write a checkpoint every this many steps and after the last
     * (default: the number of batches of the sampler's first epoch, at most `steps`).
     */
    everySteps: positiveIntegerField.optional(),
    /** Held-out items used per validation (seeded sample, all labels kept). */
    maxItems: positiveIntegerField.default(5000),
    ks: z.array(positiveIntegerField).default([1, 2, 4, 8]),
    /** k-means seeding of the NMI (as `dml eval --kmeans-init`); absent: k-means++ in rounds. */
    kmeansInit: z.enum(KMEANS_INITS).optional(),
    /**
     * Cluster counts of the NMI curve recorded per validation, as `dml eval --cluster-counts` takes them:
     * integers or multiples of the held-out label count (`["1x", "2x", "5x", "10x", "30x"]`, the
     * NMI+ sweep). 1x is always included (it gives `nmi`); NMI+ (`nmiPlus`) is the point at 10x and
     * is null unless 10x is listed. Default `["1x"]`: NMI alone.
     */
    clusterCounts: clusterCountSpecsSchema('validation.clusterCounts').default(['1x']),
  })
  .strict()
  .default({ every: 1, maxItems: 5000, ks: [1, 2, 4, 8], clusterCounts: ['1x'] });
