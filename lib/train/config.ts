/**
 * @file The training configuration (`dml train --config train.json`): one zod schema that validates
 * the file, fills defaults and gives the TypeScript type, composed of the schemas of its parts, each
 * beside its code (the model's in models/model-spec.ts, the sampler's in samplers/sampler.ts, the
 * optimiser's in optimizer.ts with the schedule's in lr-schedule.ts, the images' in training-data.ts,
 * the augmentation's in batch-augmentation.ts, the features backbone's in models/backbone-features.ts,
 * the validation's in validation.ts, the loss's in losses/registry.ts, checked by createLoss). Flags override fields before validation.
 * Everything that can be checked without training (unknown loss, embedding dim 0, a sampler that a
 * class cannot satisfy, missing data) fails before the first step with one message naming the field.
 */
import { z } from 'zod';
import { positiveIntegerField } from '../util/zod-fields.js';
import { modelSpecSchema } from './models/model-spec.js';
import { samplerSpecSchema } from './samplers/sampler.js';
import { optimizerSchema } from './optimizer.js';
import { imageSpecSchema } from './training-data.js';
import { batchAugmentationSchema } from './batch-augmentation.js';
import { featuresSpecSchema } from './models/backbone-features.js';
import { validationSpecSchema } from './validation.js';
import { configLossSchema, lossSpecProblems } from './losses/registry.js';
import { didYouMean } from '../util/did-you-mean.js';
import { DmlError } from '../errors.js';
import { DEVICE_CHOICES } from '../onnx/devices.js';
import { TRAINING_BACKENDS } from './training-backends.js';

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
        maxTrainItems: positiveIntegerField.optional(),
        /** Cap on preloaded inputs in bytes. */
        maxPreloadBytes: positiveIntegerField.optional(),
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
    /** Loss name and options as written; createLoss (lib/train/losses/registry.ts) checks them and fills the defaults. */
    loss: configLossSchema,
    sampler: samplerSpecSchema,
    optimizer: optimizerSchema,
    /** Passes over the sampler's batches; give this or `steps`. */
    epochs: positiveIntegerField.optional(),
    /**
     * Optimiser steps (batches) of the run, across as many sampler epochs as they take (the last one
     * cut short); give this or `epochs`. Validation and checkpoints then come every
     * `validation.everySteps` steps.
     */
    steps: positiveIntegerField.optional(),
    seed: z.number().int().min(0).max(0xffffffff).default(0),
    /**
     * Where training runs: `onnx`, the graph trainer (onnxruntime graphs per step, on the `device` it
     * picks; lib/train/graph-network.ts), or a TensorFlow.js backend; `auto` (the default) picks the
     * graph trainer unless TensorFlow.js's native backend is installed (lib/train/training-engine.ts).
     */
    backend: z.enum(TRAINING_BACKENDS).default('auto'),
    /** The `onnx` backend's execution provider: `auto` (CUDA, else WebGPU, else CPU; the default), `cuda`, `webgpu` or `cpu`. */
    device: z.enum(DEVICE_CHOICES).optional(),
    /**
     * The `onnx` backend runs a batch of more items than this in micro-batches (gradient accumulation,
     * the loss on the whole batch), so that a graph run holds one micro-batch's activations
     * (lib/engine/graph-trainer/graph-trainer.ts, `microBatch`). Default: the whole batch in one run.
     */
    microBatch: positiveIntegerField.optional(),
    validation: validationSpecSchema,
    scatter: z
      .object({
        every: positiveIntegerField.default(1),
        set: z.enum(['train', 'validation']).default('validation'),
        maxPoints: positiveIntegerField.default(2000),
      })
      .strict()
      .default({ every: 1, set: 'validation', maxPoints: 2000 }),
    /** Output folder: checkpoints, log.jsonl, report.json, config.json, scatter/. */
    out: z.string().min(1),
    /** The JSON Schema an editor checks the file against (`dmlkit/train-config.schema.json`); not used by training. */
    $schema: z.string().optional(),
  })
  .strict()
  .superRefine((c, context) => {
    // The loss's options with the rest, so a file's every problem comes in one message (createLoss checks them again when the run builds it).
    for (const problem of lossSpecProblems(c.loss)) context.addIssue({ code: 'custom', path: ['loss', ...problem.path], message: problem.message });
    if ((c.epochs === undefined) === (c.steps === undefined)) {
      const got = c.epochs === undefined ? 'neither' : `epochs ${c.epochs} and steps ${c.steps}`;
      context.addIssue({ code: 'custom', path: ['epochs'], message: `give exactly one of epochs (passes over the sampler's batches) and steps (optimiser steps), got ${got}` });
    }
    // With `auto` these choose the graph trainer (lib/train/training-engine.ts).
    const graphPossible = c.backend === 'onnx' || c.backend === 'auto';
    if (c.model.kind === 'onnx' && !graphPossible) {
      context.addIssue({ code: 'custom', path: ['backend'], message: `model.kind "onnx" is trained by the graph trainer: set backend "onnx" or "auto" (got ${c.backend})` });
    }
    if (c.device !== undefined && !graphPossible) {
      context.addIssue({ code: 'custom', path: ['device'], message: `chooses where the onnx backend runs; with backend ${c.backend} remove it (got ${c.device})` });
    }
    if (c.microBatch !== undefined && !graphPossible) {
      context.addIssue({ code: 'custom', path: ['microBatch'], message: `splits the onnx backend's batches; with backend ${c.backend} remove it (got ${c.microBatch})` });
    }
    if (c.steps === undefined && c.validation.everySteps !== undefined) {
      context.addIssue({ code: 'custom', path: ['validation', 'everySteps'], message: `applies to a steps run only (set steps instead of epochs), got ${c.validation.everySteps} in an epochs run` });
    }
    if (c.steps !== undefined && c.optimizer.warmup !== undefined && c.optimizer.warmup.steps >= c.steps) {
      context.addIssue({ code: 'custom', path: ['optimizer', 'warmup', 'steps'], message: `must be below steps (${c.steps}): a longer warm-up never reaches the learning rate, got ${c.optimizer.warmup.steps}` });
    }
    const { schedule, learningRate } = c.optimizer;
    if (schedule.kind === 'cosine' && schedule.minLearningRate > learningRate) {
      context.addIssue({
        code: 'custom',
        path: ['optimizer', 'schedule', 'minLearningRate'],
        message: `must be at most optimizer.learningRate (${learningRate}), which the cosine anneals down from (a larger one makes the rate climb), got ${schedule.minLearningRate}`,
      });
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
