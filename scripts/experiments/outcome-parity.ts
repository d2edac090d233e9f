/**
 * @file Parity of outcomes with PyTorch (issue: a graph trainer checked against PyTorch): one `convnet`
 * recipe (Recipe R's network and loss) trained three ways on the same training images, and every
 * resulting network scored by dmlkit's validation on the same held-out images:
 * - `torch`: PyTorch (scripts/reference/torch_outcome.py) on the training images this config loads,
 *   exported as ONNX before its first step and after its last; with `--torch-batch-seeds`, one run per
 *   seed of its batch sampling, all from the same initial weights (how far PyTorch's own outcome moves
 *   with the batches alone);
 * - `onnx`: dmlkit's graph trainer (`backend: "onnx"`, `model.kind: "onnx"`) from PyTorch's initial
 *   ONNX file: the same starting weights;
 * - `tfjs`: the config as written (the `convnet` kind on its TensorFlow.js backend, its own seeded
 *   initialisation): the path that sat at ln 2 on Recipe R's settings.
 * The table (`<out>/table.md`, `table.json`) gives held-out R@1, MAP@R and NMI before and after, the mean
 * loss over all steps, and seconds per step. The config's `data.augmentation` is dropped for all
 * three unless `--augmentation keep`: then PyTorch mirrors its random rescale and translation (with its
 * own draws; a config that also crops or flips is refused). Any validation between the first and the
 * last step is dropped too. `--export user` has PyTorch write its initial file as users write the call
 * (eval mode, opset 13: fresh BatchNorms share initializers through Identity aliases), instead of with
 * the initializers apart. The momentum follows the config's `cycleMomentum` on both sides.
 *
 *   npx tsx scripts/experiments/outcome-parity.ts [--config scripts/configs/fashion-mnist-convnet-variants.json] [--steps 2400]
 *        [--out runs/outcome-parity/fashion-mnist] [--runs torch,onnx,tfjs] [--threads 2] [--downsample stride|maxpool] [--pooling avg|avgmax]
 *        [--torch-batch-seeds 0,1,2] [--augmentation drop|keep] [--export preserve|user]
 *
 * `--downsample` and `--pooling` replace the config's `convnet` options (the defaults are Recipe R's
 * maxpool and avgmax; stride and avg are the `convnet` that collapsed).
 *
 * The PyTorch side needs Debian's python3-torch and python3-numpy (`DML_PYTHON` names another python).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { encodeNpy } from '../../lib/embed/npy.js';
import { parseTrainConfig, type TrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import type { ConvnetModelSpec } from '../../lib/train/models/model-spec.js';
import { loadImageData, selectRunItems } from '../../lib/train/run-inputs.js';
import { trainingImagePreprocessing, type TrainingImageSpec } from '../../lib/train/training-data.js';
import type { EpochRecord } from '../../lib/train/epoch-record.js';
import { train } from '../../lib/train/trainer.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { argument, integerArgument, lastValidation } from './table-support.js';

const PYTHON = process.env.DML_PYTHON ?? '/usr/bin/python3';

interface Scores {
  r1: number;
  mapAtR: number;
  nmi: number;
}

interface Row {
  run: string;
  before: Scores;
  after: Scores;
  /** Mean loss over all steps. */
  meanLoss: number | null;
  secondsPerStep: number;
}

const scores = (v: NonNullable<EpochRecord['validation']>): Scores => ({ r1: 100 * (v.recall['1'] ?? Number.NaN), mapAtR: 100 * (v.mapAtR ?? Number.NaN), nmi: 100 * v.nmi });

/** Writes the config's training images (preprocessed, NHWC) and labels, and the recipe, for the PyTorch side. */
async function writeTorchInputs(config: TrainConfig, folder: string, threads: number, batchSeed: number, exportMode: string): Promise<void> {
  const model = config.model as ConvnetModelSpec;
  const image = trainingImagePreprocessing(config.data.image, []);
  if (model.kind !== 'convnet' || !image) throw new Error('outcome-parity compares a `convnet` model on images (data.image with height, width and channels)');
  const { trainItems, validationItems } = await selectRunItems(config, (m) => process.stderr.write(`warning: ${m}\n`));
  const { trainData } = await loadImageData(config, [null, image.height, image.width, image.channels], trainItems, validationItems.slice(0, 0), undefined);
  const write = (file: string, parts: Uint8Array[]): void => writeFileSync(path.join(folder, file), Buffer.concat(parts));
  write('train-x.npy', encodeNpy(trainData.inputs, [trainData.count, image.height, image.width, image.channels]));
  write('train-y.npy', encodeNpy(Int32Array.from(trainData.labels), [trainData.count]));
  const sampler = config.sampler as { groupSize?: number; batchSize?: number };
  const loss = config.loss as { name: string; order?: number; temperature?: number };
  if (loss.name !== 'ephn') throw new Error(`outcome-parity runs the EPHN loss (Recipe R's); the config has ${loss.name}`);
  const schedule = config.optimizer.schedule;
  if (config.optimizer.kind !== 'adam' || schedule.kind !== 'onecycle') throw new Error('outcome-parity runs Adam with the onecycle schedule (Recipe R\'s)');
  const augmentation = config.data.augmentation;
  if (augmentation && (augmentation.scale[0] !== 1 || augmentation.scale[1] !== 1 || augmentation.ratio[0] !== 1 || augmentation.ratio[1] !== 1 || augmentation.flipProbability !== 0 || !['white', 'black'].includes(augmentation.fill ?? 'black'))) {
    throw new Error('outcome-parity --augmentation keep mirrors rescale, translate and a white or black fill only: set scale and ratio to [1, 1] and flipProbability to 0');
  }
  const fillPixel = augmentation?.fill === 'white' ? 1 : 0;
  const groupSize = sampler.groupSize ?? 4;
  const recipe = {
    network: { widths: model.widths, depth: model.depth, downsample: model.downsample ?? 'maxpool', pooling: model.pooling ?? 'avgmax', embeddingDim: model.embeddingDim },
    loss: { order: loss.order ?? 1, temperature: loss.temperature ?? 0.1 },
    groupSize,
    classes: (sampler.batchSize ?? 0) / groupSize,
    learningRate: config.optimizer.learningRate,
    pctStart: schedule.pctStart,
    cycleMomentum: schedule.cycleMomentum ?? true,
    baseMomentum: schedule.baseMomentum,
    maxMomentum: schedule.maxMomentum,
    export: exportMode,
    ...(augmentation
      ? { augmentation: { rescale: augmentation.rescale ?? [1, 1], translate: augmentation.translate ?? 0, fill: image.mean.map((m, c) => (fillPixel - m) / (image.std[c] as number)) } }
      : {}),
    steps: config.steps,
    seed: config.seed,
    batchSeed,
    threads,
  };
  writeFileSync(path.join(folder, 'recipe.json'), `${JSON.stringify(recipe, null, 2)}\n`);
}

async function main(): Promise<void> {
  const configFile = argument('--config', 'scripts/configs/fashion-mnist-convnet-variants.json');
  const steps = integerArgument('--steps', 2400) as number;
  const threads = integerArgument('--threads', 2) as number;
  const runs = argument('--runs', 'torch,onnx,tfjs').split(',');
  const base = JSON.parse(readFileSync(configFile, 'utf8')) as TrainConfigInput & Record<string, unknown>;
  for (const option of ['downsample', 'pooling']) {
    const value = argument(`--${option}`, '');
    if (value !== '') base.model = { ...base.model, [option]: value } as TrainConfigInput['model'];
  }
  const out = path.resolve(argument('--out', path.join('runs/outcome-parity', path.basename(configFile, '.json'))));
  const keepAugmentation = argument('--augmentation', 'drop') === 'keep';
  const exportMode = argument('--export', 'preserve');
  if (!['preserve', 'user'].includes(exportMode)) throw new Error(`--export: preserve or user, got ${exportMode}`);
  const { augmentation: dropped, ...kept } = base.data as NonNullable<TrainConfigInput['data']> & { augmentation?: unknown };
  // The images of the config's model (resized to the larger side, its mean and std) for every run: a
  // `model.kind: "onnx"` run would otherwise fill the fields left out with a backbone's defaults (a crop margin).
  const image = trainingImagePreprocessing(kept.image as TrainingImageSpec | undefined, []);
  const pinned = image ? { ...kept, image: { ...kept.image, resizeShorter: image.resizeShorter, mean: image.mean, std: image.std } } : kept;
  const data = keepAugmentation && dropped !== undefined ? { ...pinned, augmentation: dropped } : pinned;
  const configOf = (name: string, overrides: Partial<TrainConfigInput>): TrainConfig =>
    parseTrainConfig({ ...base, data, steps, validation: { ...(base.validation ?? {}), everySteps: steps }, out: path.join(out, name), ...overrides } as TrainConfigInput, configFile);
  const torchFolder = path.join(out, 'torch');
  mkdirSync(torchFolder, { recursive: true });
  await tf.setBackend('cpu');
  const rows: Row[] = [];
  const log = (name: string) => (line: string) => process.stderr.write(`[${name}] ${line}\n`);
  // One validation period spans the whole run, so its loss is the mean over all steps.
  const row = (name: string, history: EpochRecord[], secondsPerStep: number): void => {
    const before = scores(history[0]?.validation as NonNullable<EpochRecord['validation']>);
    rows.push({ run: name, before, after: scores(lastValidation(history)), meanLoss: history[history.length - 1]?.loss ?? null, secondsPerStep });
  };
  if (runs.includes('torch')) {
    const batchSeeds = argument('--torch-batch-seeds', String(base.seed ?? 0)).split(',').map(Number);
    for (const [i, batchSeed] of batchSeeds.entries()) {
      // The first seed's folder holds the initial ONNX file the graph trainer starts from.
      const folder = i === 0 ? torchFolder : `${torchFolder}-batches-${batchSeed}`;
      mkdirSync(folder, { recursive: true });
      await writeTorchInputs(configOf('torch', {}), folder, threads, batchSeed, exportMode);
      const made = spawnSync(PYTHON, [fileURLToPath(new URL('../reference/torch_outcome.py', import.meta.url)), folder], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      if (made.status !== 0) throw new Error(`scripts/reference/torch_outcome.py failed (python3-torch and python3-numpy needed): exit ${made.status}`);
      const torch = JSON.parse(readFileSync(path.join(folder, 'torch.json'), 'utf8')) as { torch: string; seconds: number; lossPer100Steps: number[] };
      // PyTorch's networks scored by dmlkit's validation: the first record of a run from each file is its untrained state.
      const score = async (file: string): Promise<Scores> => {
        const overrides = { model: { kind: 'onnx', path: path.join(folder, `${file}.onnx`) }, backend: 'onnx', steps: 1, optimizer: { kind: 'adam', learningRate: 1e-3 }, validation: { ...(base.validation ?? {}), everySteps: 1 } };
        const result = await train(configOf(`${path.basename(folder)}-${file}`, overrides as Partial<TrainConfigInput>), { overwrite: true, log: log(`torch ${file}`) });
        return scores(result.history[0]?.validation as NonNullable<EpochRecord['validation']>);
      };
      const meanLoss = torch.lossPer100Steps.reduce((a, b) => a + b, 0) / torch.lossPer100Steps.length;
      rows.push({ run: `PyTorch ${torch.torch}, batch seed ${batchSeed}`, before: await score('initial'), after: await score('final'), meanLoss, secondsPerStep: torch.seconds / steps });
    }
  }
  if (runs.includes('onnx')) {
    const start = performance.now();
    const result = await train(configOf('onnx', { model: { kind: 'onnx', path: path.join(torchFolder, 'initial.onnx') }, backend: 'onnx' } as Partial<TrainConfigInput>), { overwrite: true, log: log('onnx') });
    row("dmlkit graph trainer, from PyTorch's initial weights", result.history, (performance.now() - start) / 1000 / steps);
  }
  if (runs.includes('tfjs')) {
    const start = performance.now();
    const result = await train(configOf('tfjs', {}), { overwrite: true, log: log('tfjs') });
    row(`dmlkit ${result.backend} (${String(base.model?.kind)}, its own initialisation)`, result.history, (performance.now() - start) / 1000 / steps);
  }
  const f = (v: number): string => v.toFixed(2);
  const table = [
    `${configFile}, ${steps} steps, augmentation ${keepAugmentation && dropped !== undefined ? 'on (rescale and translate, each side its own draws)' : 'off'}, PyTorch's initial file exported ${exportMode === 'user' ? 'as users write the call (eval mode, opset 13, aliased initializers)' : 'with the initializers apart (opset 17)'}; held-out R@1, MAP@R and NMI in %, untrained -> trained; loss: mean over all steps`,
    '',
    '| run | R@1 | MAP@R | NMI | mean loss | s/step |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.run} | ${f(r.before.r1)} -> ${f(r.after.r1)} | ${f(r.before.mapAtR)} -> ${f(r.after.mapAtR)} | ${f(r.before.nmi)} -> ${f(r.after.nmi)} | ${r.meanLoss === null ? '-' : r.meanLoss.toFixed(3)} | ${r.secondsPerStep.toFixed(3)} |`),
  ].join('\n');
  process.stdout.write(`${table}\n`);
  await writeFileAtomic(path.join(out, 'table.md'), `${table}\n`);
  await writeFileAtomic(path.join(out, 'table.json'), `${JSON.stringify({ config: configFile, steps, rows }, null, 2)}\n`);
}

await main();
