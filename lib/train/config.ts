/**
 * @file The training configuration (`dml train --config train.json`): one zod schema that validates
 * the file, fills defaults and gives the TypeScript type. Flags override fields before validation.
 * Everything that can be checked without training (unknown loss, embedding dim 0, a sampler that a
 * class cannot satisfy, missing data) fails before the first step with one message naming the field.
 */
import { z } from 'zod';
import { didYouMean } from '../util/did-you-mean.js';
import { DmlError } from '../errors.js';
import { parseClusterCountSpecs, type ClusterCountSpec } from '../eval/cluster-counts.js';
import { DEFAULT_DEVICE, DEVICE_CHOICES } from '../onnx/devices.js';
import { TRAINING_BACKENDS } from '../engine/tfjs/backend-registry.js';
import { DEFAULT_EMBED_BATCH_SIZE } from '../util/defaults.js';

const positiveInt = z.number().int().positive();
const activation = z.enum(['relu', 'elu', 'tanh', 'sigmoid']);

/** Model specs (see lib/train/models/model-spec.ts for their meaning). */
export const modelSpecSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('mlp'),
      /** Input length; for images it must equal height x width x channels (the image is flattened). */
      inputDim: positiveInt,
      hidden: z.array(positiveInt).default([]),
      embeddingDim: positiveInt,
      activation: activation.default('relu'),
      batchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('cnn'),
      inputShape: z.tuple([positiveInt, positiveInt, positiveInt]),
      embeddingDim: positiveInt,
      filters: z.array(positiveInt).default([32, 64]),
      kernelSize: positiveInt.default(3),
      hidden: z.array(positiveInt).default([128]),
      activation: activation.default('relu'),
      batchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('convnet'),
      inputShape: z.tuple([positiveInt, positiveInt, positiveInt]),
      embeddingDim: positiveInt,
      widths: z.array(positiveInt).min(1).default([32, 64, 128, 256]),
      depth: positiveInt.default(1),
      downsample: z.enum(['stride', 'maxpool']).default('maxpool'),
      pooling: z.enum(['avg', 'max', 'avgmax']).default('avgmax'),
      hidden: z.array(positiveInt).default([]),
      activation: activation.default('relu'),
      poolBatchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('tfjs-backbone'),
      modelJson: z.string().min(1),
      embeddingDim: positiveInt,
      outputLayer: z.string().optional(),
      pooling: z.enum(['avg', 'max']).default('avg'),
      hidden: z.array(positiveInt).default([]),
      activation: activation.default('relu'),
      batchNorm: z.boolean().default(false),
      trainBackbone: z.boolean().default(true),
    })
    .strict(),
  z
    .object({
      kind: z.literal('onnx'),
      /** An ONNX file (a PyTorch export, a downloaded network) with an NCHW image input [batch, C, H, W]: C, H, W are data.image's. */
      path: z.string().min(1),
      /** The value the network ends at (a node output); default the model's output. */
      output: z.string().min(1).optional(),
      /** A new head after `output` (lib/engine/graph/embedding-network.ts); needed when `output` is a feature map. */
      head: z
        .object({ pooling: z.enum(['avg', 'max', 'avgmax']).default('avg'), batchNorm: z.boolean().default(false), embeddingDim: positiveInt })
        .strict()
        .optional(),
    })
    .strict(),
]);

/** Batch sampler: c = batchSize / groupSize classes x n = groupSize images (docs/methods.md section 7; `pairing`: LoOp's, section 3). */
export const samplerSpecSchema = z
  .object({
    kind: z.enum(['filled', 'sample', 'exact', 'pairing']).default('exact'),
    groupSize: z.number().int().min(2),
    batchSize: positiveInt,
    repeat: positiveInt.default(1),
    dropLast: z.boolean().default(false),
    minClassSize: positiveInt.optional(),
    lengthRule: z.enum(['nearest', 'up']).optional(),
    replacement: z.boolean().optional(),
  })
  .strict();

/** Learning-rate schedule (lib/train/lr-schedule.ts has the formulas, PyTorch's). */
export const scheduleSchema = z.discriminatedUnion('kind', [
  /** Multiply by `optimizer.gamma` at each of `optimizer.milestones` (MultiStepLR). */
  z.object({ kind: z.literal('milestones') }).strict(),
  /** Cosine annealing from the learning rate to `minLearningRate` over the run's steps (CosineAnnealingLR). */
  z.object({ kind: z.literal('cosine'), minLearningRate: z.number().min(0).default(0) }).strict(),
  /** OneCycleLR (two phases) with max_lr = `optimizer.learningRate`, over the run's steps. */
  z
    .object({
      kind: z.literal('onecycle'),
      /** Fraction of the steps spent rising from learningRate / divFactor to learningRate. */
      pctStart: z.number().gt(0).lt(1).default(0.3),
      /** The initial learning rate is learningRate / divFactor. */
      divFactor: z.number().positive().default(25),
      /** The final learning rate is the initial one / finalDivFactor. */
      finalDivFactor: z.number().positive().default(1e4),
      /** Annealing within each phase: cosine (PyTorch's default) or linear. */
      anneal: z.enum(['cos', 'linear']).default('cos'),
    })
    .strict(),
]);

/** Optimiser with decoupled weight decay and a learning-rate schedule. */
export const optimizerSchema = z
  .object({
    kind: z.enum(['sgd', 'momentum', 'adam']).default('adam'),
    learningRate: z.number().positive(),
    /** Momentum of `momentum` (SGD with momentum). */
    momentum: z.number().min(0).max(1).default(0.9),
    /**
     * Decoupled weight decay (AdamW / SGDW style): after each step every kernel (not biases, not
     * normalisation parameters) is multiplied by (1 - lr * weightDecay).
     */
    weightDecay: z.number().min(0).default(0),
    /**
     * With the `milestones` schedule: the epochs (an `epochs` run) or steps (a `steps` run), counted
     * from the start, after which the learning rate is multiplied by gamma.
     */
    milestones: z.array(positiveInt).default([]),
    gamma: z.number().positive().default(0.1),
    /** The schedule of the learning rate over the run; default `milestones`. */
    schedule: scheduleSchema.default({ kind: 'milestones' }),
    /**
     * Linear warm-up over the first `steps` optimiser steps from `startFactor` x the rate (LinearLR),
     * with the `milestones` and `cosine` schedules (`onecycle` has its own, `schedule.pctStart`).
     */
    warmup: z
      .object({
        steps: positiveInt,
        startFactor: z.number().gt(0).max(1).default(1 / 3),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((o, context) => {
    if (o.schedule.kind !== 'milestones' && o.milestones.length > 0) {
      context.addIssue({ code: 'custom', path: ['milestones'], message: `milestones apply to the milestones schedule only, got [${o.milestones.join(', ')}] with schedule ${o.schedule.kind}` });
    }
    if (o.schedule.kind === 'onecycle' && o.warmup !== undefined) {
      context.addIssue({ code: 'custom', path: ['warmup'], message: `onecycle warms up by itself (schedule.pctStart); remove optimizer.warmup (got ${JSON.stringify(o.warmup)})` });
    }
  });

/** Input images: size and normalisation; defaults from the model's input shape, mean 0, std 1. */
export const imageSpecSchema = z
  .object({
    height: positiveInt,
    width: positiveInt,
    channels: z.union([z.literal(1), z.literal(3)]),
    resizeShorter: positiveInt.optional(),
    mean: z.array(z.number()).optional(),
    std: z.array(z.number()).optional(),
  })
  .strict();

/** Train augmentation (random resized crop + horizontal flip); torchvision's defaults. */
export const augmentationSchema = z
  .object({
    scale: z.tuple([z.number(), z.number()]).default([0.08, 1]),
    ratio: z.tuple([z.number(), z.number()]).default([3 / 4, 4 / 3]),
    flipProbability: z.number().default(0.5),
  })
  .strict();

/**
 * Augmentation of preloaded training images (`data.augmentation`): the crop and flip above, then a
 * random rescale about the centre (`rescale`, below 1 zooms out) and a shift by up to `translate`
 * pixels, the exposed border filled with `fill` (lib/train/batch-affine.ts).
 */
export const batchAugmentationSchema = augmentationSchema.extend({
  rescale: z.tuple([z.number().positive(), z.number().positive()]).optional(),
  translate: z.number().int().min(0).default(0),
  fill: z.enum(['white', 'black', 'edge', 'mean']).default('black'),
});

/**
 * Recipe (c): train a head on features of a frozen ONNX backbone, computed once with onnxruntime
 * through the evaluation spine's embedder and cache (lib/train/models/backbone-features.ts).
 */
export const featuresSpecSchema = z
  .object({
    /** The ONNX backbone; its preprocessing comes from its metadata, overridden by data.image fields. */
    backbone: z.string().min(1),
    /** Augmented views per training image besides the plain view; each step draws one view per row. */
    augmentedViews: z.number().int().min(0).default(0),
    /** Augmentation of the augmented views (defaults: torchvision's RandomResizedCrop + flip). */
    augmentation: augmentationSchema.default({ scale: [0.08, 1], ratio: [3 / 4, 4 / 3], flipProbability: 0.5 }),
    /** Feature cache folder (shared between runs; default `.dml-cache/features`). */
    cacheDir: z.string().min(1).default('.dml-cache/features'),
    /** Execution provider of the backbone. */
    device: z.enum(DEVICE_CHOICES).default(DEFAULT_DEVICE),
    /** Images per onnxruntime call. */
    batchSize: positiveInt.default(DEFAULT_EMBED_BATCH_SIZE),
  })
  .strict();

/** The zod schema of a training config (`dml train --config`); {@link parseTrainConfig} applies it with clear messages. */
export const trainConfigSchema = z
  .object({
    data: z
      .object({
        /** Dataset spec `<layout>:<path>`, as for dml eval. Training uses split "train". */
        dataset: z.string().min(1),
        /**
         * Class-disjoint split: these labels are training classes, the rest is held out (e.g. "0-4").
         * Absent: the dataset's own split, e.g. for `fashion-mnist:` (IDX) the training file trains and
         * the test file (the same ten classes) is held out; a folder with `train/` and `test/` likewise.
         * Both protocols therefore exist without a further option: set trainClasses for the
         * class-disjoint one (docs/methods.md 8.1), leave it out for the same-classes one (paper 004's
         * class-collapse experiment).
         */
        trainClasses: z.string().optional(),
        /**
         * Coarse training labels (paper 004's class-collapse experiment, docs/methods.md section 5): group
         * name -> the training classes it merges, each a label or a range term as in trainClasses
         * (numbers are read as labels), e.g. `{ "tops": [0, 2, 4, 6], "footwear": [5, 7, 9], "other":
         * [1, 3, 8] }`. The sampler, the loss and the scatter diagram of the training set see the group
         * names as labels; validation keeps the fine labels. Every training class must be in exactly
         * one group, and only training classes may be named (checked before training, see
         * lib/train/label-groups.ts). The run's config.json records the resolved groups. Absent: the
         * dataset's labels.
         */
        trainLabelGroups: z.record(z.string().min(1), z.array(z.union([z.string().min(1), z.number().int().min(0)])).min(1)).optional(),
        image: imageSpecSchema.optional(),
        /** Train on a seeded sample of at most this many training items (all when absent). */
        maxTrainItems: positiveInt.optional(),
        /** Cap on preloaded inputs in bytes. */
        maxPreloadBytes: positiveInt.optional(),
        /** Train a head (model kind `mlp`, inputDim = the backbone's dimension) on backbone features. */
        features: featuresSpecSchema.optional(),
        /**
         * Augmentation of preloaded training images (models on pixels), applied to the batch tensor
         * each step with per-epoch seeded crop boxes and flips; absent = none.
         */
        augmentation: batchAugmentationSchema.optional(),
      })
      .strict(),
    model: modelSpecSchema,
    /** Loss name and options; validated by createLoss (lib/train/losses/registry.ts), which fills defaults. */
    loss: z.object({ name: z.string() }).loose(),
    sampler: samplerSpecSchema,
    optimizer: optimizerSchema,
    /** Passes over the sampler's batches; give this or `steps`. */
    epochs: positiveInt.optional(),
    /**
     * Optimiser steps (batches) of the run, across as many sampler epochs as they take (the last one
     * cut short); give this or `epochs`. Validation and checkpoints then come every
     * `validation.everySteps` steps.
     */
    steps: positiveInt.optional(),
    seed: z.number().int().min(0).max(0xffffffff).default(0),
    /**
     * Where training runs: a TensorFlow.js backend (`auto` picks the fastest that loads), or `onnx`,
     * the graph trainer (one onnxruntime graph per step, on the `device` it picks; lib/train/graph-network.ts).
     */
    backend: z.enum(TRAINING_BACKENDS).default('auto'),
    /** The `onnx` backend's execution provider: `auto` (CUDA, else WebGPU, else CPU; the default), `cuda`, `webgpu` or `cpu`. */
    device: z.enum(DEVICE_CHOICES).optional(),
    validation: z
      .object({
        /** Validate every this many epochs (and after the last); an `epochs` run. */
        every: positiveInt.default(1),
        /**
         * A `steps` run: validate and write a checkpoint every this many steps and after the last
         * (default: the number of batches of the sampler's first epoch, at most `steps`).
         */
        everySteps: positiveInt.optional(),
        /** Held-out items used per validation (seeded sample, all labels kept). */
        maxItems: positiveInt.default(5000),
        ks: z.array(positiveInt).default([1, 2, 4, 8]),
        /** k-means seeding of the NMI (as `dml eval --kmeans-init`); absent: k-means++ in rounds. */
        kmeansInit: z.enum(['greedy-k-means++', 'k-means++', 'random']).optional(),
        /**
         * Cluster counts of the NMI curve recorded per validation, as `dml eval --cluster-counts` takes them:
         * integers or multiples of the held-out label count (`["1x", "2x", "5x", "10x", "30x"]`, the
         * NMI+ sweep). 1x is always included (it gives `nmi`); NMI+ (`nmiPlus`) is the point at 10x and
         * is null unless 10x is listed. Default `["1x"]`: NMI alone.
         */
        clusterCounts: z
          .array(z.string())
          .default(['1x'])
          .superRefine((specs, context) => {
            try {
              parseClusterCountSpecs(specs, 'validation.clusterCounts');
            } catch (err) {
              context.addIssue({ code: 'custom', message: (err as Error).message });
            }
          })
          .transform((specs) => specs as ClusterCountSpec[]),
      })
      .strict()
      .default({ every: 1, maxItems: 5000, ks: [1, 2, 4, 8], clusterCounts: ['1x'] }),
    scatter: z
      .object({
        every: positiveInt.default(1),
        set: z.enum(['train', 'validation']).default('validation'),
        maxPoints: positiveInt.default(2000),
      })
      .strict()
      .default({ every: 1, set: 'validation', maxPoints: 2000 }),
    /** Output folder: checkpoints, log.jsonl, report.json, config.json, scatter/. */
    out: z.string().min(1),
  })
  .strict()
  .superRefine((c, context) => {
    if ((c.epochs === undefined) === (c.steps === undefined)) {
      const got = c.epochs === undefined ? 'neither' : `epochs ${c.epochs} and steps ${c.steps}`;
      context.addIssue({ code: 'custom', path: ['epochs'], message: `give exactly one of epochs (passes over the sampler's batches) and steps (optimiser steps), got ${got}` });
    }
    if (c.model.kind === 'onnx' && c.backend !== 'onnx') {
      context.addIssue({ code: 'custom', path: ['backend'], message: `model.kind "onnx" is trained by the graph trainer: set backend "onnx" (got ${c.backend})` });
    }
    if (c.model.kind === 'onnx' && c.data.image === undefined) {
      context.addIssue({ code: 'custom', path: ['data', 'image'], message: 'model.kind "onnx" needs data.image { height, width, channels }: the size of the images the network takes' });
    }
    if (c.device !== undefined && c.backend !== 'onnx') {
      context.addIssue({ code: 'custom', path: ['device'], message: `chooses where the onnx backend runs; with backend ${c.backend} remove it (got ${c.device})` });
    }
    if (c.steps === undefined && c.validation.everySteps !== undefined) {
      context.addIssue({ code: 'custom', path: ['validation', 'everySteps'], message: `applies to a steps run only (set steps instead of epochs), got ${c.validation.everySteps} in an epochs run` });
    }
    if (c.steps !== undefined && c.optimizer.warmup !== undefined && c.optimizer.schedule.kind === 'cosine' && c.optimizer.warmup.steps >= c.steps) {
      context.addIssue({ code: 'custom', path: ['optimizer', 'warmup', 'steps'], message: `must be below steps (${c.steps}) with the cosine schedule, got ${c.optimizer.warmup.steps}` });
    }
  });

/** `data.features` with its defaults filled in. */
export type FeaturesSpec = z.output<typeof featuresSpecSchema>;

/** A config as written in a file (defaults optional). */
export type TrainConfigInput = z.input<typeof trainConfigSchema>;
/** A validated config with every default filled in. */
export type TrainConfig = z.output<typeof trainConfigSchema>;

/** The run's length: a number of epochs or of optimiser steps (exactly one is set, the schema checks it). */
export type RunBudget = { unit: 'epochs'; epochs: number } | { unit: 'steps'; steps: number };

/** The budget of a validated config. */
export function runBudget(config: Pick<TrainConfig, 'epochs' | 'steps'>): RunBudget {
  if (config.steps !== undefined) return { unit: 'steps', steps: config.steps };
  if (config.epochs !== undefined) return { unit: 'epochs', epochs: config.epochs };
  throw new DmlError('E_ARG', 'epochs: give exactly one of epochs and steps, got neither');
}

/** The wrappers, unions and containers a config schema walk looks through. */
type SchemaDef = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
  element?: z.ZodType;
  valueType?: z.ZodType;
  left?: z.ZodType;
  right?: z.ZodType;
};
const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

/** The schemas of zod type `type` that `schema` can be at its top (through optional, default, pipe, union...). */
function reachable(schema: z.ZodType, type: 'object' | 'array', depth = 0): SchemaDef[] {
  if (depth > 8) return [];
  const def = defOf(schema);
  if (def.type === type) return [def];
  const inner = [def.innerType, def.in, def.out, def.left, def.right, ...(def.options ?? [])].filter((s): s is z.ZodType => s !== undefined);
  return inner.flatMap((s) => reachable(s, type, depth + 1));
}

/** The keys a config object at `path` may have (every union branch's), for "did you mean". */
function keysAt(path: readonly PropertyKey[]): Set<string> {
  let schemas: z.ZodType[] = [trainConfigSchema];
  for (const segment of path) {
    schemas = schemas.flatMap((schema) =>
      typeof segment === 'number'
        ? reachable(schema, 'array').flatMap((a) => (a.element !== undefined ? [a.element] : []))
        : reachable(schema, 'object').flatMap((o) => {
            const field = o.shape?.[String(segment)];
            return field !== undefined ? [field] : [];
          }),
    );
  }
  return new Set(schemas.flatMap((schema) => reachable(schema, 'object').flatMap((o) => Object.keys(o.shape ?? {}))));
}

/** One issue as `where: message`, an unknown key with the nearest known one ("did you mean"). */
function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    const known = keysAt(issue.path);
    const keys = issue.keys.map((key) => {
      const near = didYouMean(key, known);
      return near === undefined ? `"${key}"` : `"${key}" (did you mean "${near}"?)`;
    });
    return `${where}: unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
  }
  return `${where}: ${issue.message}`;
}

/**
 * Validates `input`; `source` names the file in the error: one line naming every bad field (`file:
 * field: problem; field: problem`), with "did you mean" for unknown keys near a known one.
 */
export function parseTrainConfig(input: unknown, source: string): TrainConfig {
  const result = trainConfigSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map(describeIssue);
  throw new DmlError('E_ARG', `${source}: ${problems.length > 1 ? `${problems.length} problems: ` : ''}${problems.join('; ')}`);
}
