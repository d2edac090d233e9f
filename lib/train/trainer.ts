/**
 * @file The training loop of `dml train`.
 *
 * Setup (everything that can fail does so before the first step): backend, dataset and class split,
 * coarse training labels (`data.trainLabelGroups`), model, loss, sampler, preloaded training and
 * validation inputs. Then per epoch: the sampler's batches (a pure function of seed and epoch), one
 * optimiser step per batch with a valid tuple (a batch without one changes nothing), decoupled weight
 * decay, NaN/Inf detection; validation through the evaluator (Recall@K, MAP@R, NMI and the NMI curve
 * over `validation.clusterCounts` with NMI+, on a seeded held-out sample with its fine labels), the
 * triplet scatter diagram (with the LoOp synthetic negatives for LoOp losses), a checkpoint, and a
 * JSONL log line per step and per epoch. Epoch 0 of the history is the untrained model.
 *
 * The budget is `epochs` or `steps` (config.ts): a `steps` run takes that many optimiser steps across
 * as many sampler epochs as they need and validates, logs and checkpoints every
 * `validation.everySteps` steps instead of at epoch ends. The learning rate is set per step by the
 * schedule (lr-schedule.ts) and logged with every step.
 *
 * Resuming (`resume: true`) loads `<out>/checkpoints/last` and continues after the step it was taken
 * at; since batches and input draws depend only on (seed, epoch), and a resume inside an epoch
 * replays the draws of the steps already taken, a resumed run repeats exactly what an uninterrupted
 * one would have done. A resume changes nothing in the run folder until
 * every check has passed and its first step has trained: a refused or failed resume (another
 * configuration, a smaller budget than the checkpoint holds, a corrupt checkpoint) leaves it byte for
 * byte as it was. It then cuts log.jsonl back to the checkpoint's step (dropping the lines a crash or
 * kill -9 interrupted) and rewrites config.json.
 *
 * The parts live beside this file: the run's inputs (run-inputs.ts), the engine choice
 * (training-engine.ts), the network on its engine (training-network.ts, opened by
 * open-training-network.ts: TensorFlow.js or the graph trainer, with its optimisers and checkpoint
 * contents), one batch's inputs (batch-step.ts) and the validation (validation.ts); this file is the
 * setup, the resume position and the step loop that ties them together, the same for every engine.
 */
import { appendFile, rm } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { collectVersions } from '../util/versions.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { checkNewRunFolder, checkResumeIdentity, runIdentity } from './run-identity.js';
import { RunFolder } from './run-folder.js';
import { createProgress } from '../util/progress.js';
import { saveCheckpoint } from './checkpoint-io.js';
import { runBudget, type TrainConfig } from './config.js';
import { LoopLoss } from './losses/loop.js';
import { LossOptimizer } from './loss-optimizer.js';
import { checkSchedule, needsTotalSteps, scheduledLearningRate, scheduledMomentum } from './lr-schedule.js';
import { FUSED_OPTIMIZER_BACKENDS } from './optimizer.js';
import { epochRng } from './samplers/epoch-rng.js';
import { batchStep } from './batch-step.js';
import { prepareEmbeddingNetwork } from '../engine/graph/embedding-network.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import type { EngineSelection } from './training-engine.js';
import type { PreprocessingSources } from '../embed/model-signature.js';
import { validateEpoch, type ValidationPoint } from './validation.js';
import type { EpochRecord } from './epoch-record.js';
import { openTrainingNetwork } from './open-training-network.js';
import type { TrainingData } from './training-data.js';
import { prepareRun, type CheckpointState, type RunPosition } from './run-setup.js';
import { DEFAULT_DEVICE, type ProviderChoice } from '../onnx/devices.js';

/** Options of {@link train}. */
export interface TrainOptions {
  /** Continue from `<out>/checkpoints/last`. */
  resume?: boolean;
  /** Replace the run `<out>` already holds; without it (or `resume`) such a folder is refused (run-identity.ts). */
  overwrite?: boolean;
  /** One line per epoch and per notice (stderr in the CLI). */
  log?: (line: string) => void;
  signal?: AbortSignal;
  /**
   * Called before each training step with the batch's labels as the sampler and the loss see them
   * (with `data.trainLabelGroups`, the group names), for diagnostics and tests.
   */
  onBatch?: (batch: { epoch: number; step: number; labels: string[] }) => void;
  /**
   * Called after each validation point is logged and checkpointed (epoch 0 included), with the
   * backend that trains and, on the onnx backend, its execution provider; `dml train` rewrites the
   * run's report.html here (lib/train/training-html.ts). Awaited before training goes on.
   */
  onValidation?: (point: { out: string; backend: string; provider?: string; history: readonly EpochRecord[] }) => void | Promise<void>;
}

/** What a finished run returns (also written to `<out>/report.json`). */
export interface TrainResult {
  out: string;
  /** The TensorFlow.js backend that trained, or `onnx` (the graph trainer). */
  backend: string;
  /** Which engine trained and why (with `backend: "auto"`, the choice lib/train/training-engine.ts made). */
  engineSelection: EngineSelection;
  /** The onnx backend's execution provider and each provider tried (as `dml eval` reports them). */
  device?: ProviderChoice;
  history: EpochRecord[];
  config: Record<string, unknown>;
  /**
   * Warnings of this run (this process, for a resumed run), also logged as `warning: <message>` lines:
   * a backend fallback, dataset notices, a batch larger than the training images, ...
   */
  warnings: string[];
  /**
   * How an image becomes the input of the trained model (pixel models, layout NHWC as tfjs trains)
   * or of its backbone (`data.features`, the backbone's own); the exporter records it in the ONNX metadata.
   */
  preprocessing: Preprocessing;
  /** A `model.kind: "onnx"` run: where each preprocessing field came from (lib/train/backbone-preprocessing.ts). */
  preprocessingSources?: PreprocessingSources;
  /** A `model.kind: "onnx"` run: the `preprocessor_config.json` read, if any. */
  preprocessorConfig?: string;
}

const CHECKPOINT = 'checkpoints/last';

/** Mixed into the seed of the per-epoch generator of input draws, apart from the sampler's stream. */
const AUGMENTATION_STREAM = 0x5bd1e995;

/** Names the last validation point of `history` in a message (the checkpoint a failure keeps): its epoch, or its step in a `steps` run. */
function lastGood(history: readonly EpochRecord[], unit: 'epochs' | 'steps'): string {
  const r = history[history.length - 1];
  if (r === undefined) return 'none';
  return unit === 'steps' ? `step ${r.globalStep ?? 0}` : `epoch ${r.epoch}`;
}

/**
 * Cuts the JSONL log `file` back to the entries up to `position` (the checkpoint a resume starts
 * from), dropping the lines of steps taken after it (and a line cut short by a kill), so the resumed
 * run's lines follow without repeats. Entries are placed by their `globalStep` (lines written before
 * step budgets existed: by their epoch). Atomic; the file is left alone when nothing is dropped or
 * when it does not exist.
 */
async function truncateLog(file: string, position: RunPosition): Promise<void> {
  let text: string;
  try {
    text = (await readRegular(file, 'log')).toString('utf8');
  } catch (err) {
    if (err instanceof DmlError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new DmlError('E_IO', `Cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  const kept = text.split('\n').filter((line) => {
    try {
      const entry = JSON.parse(line) as { epoch?: unknown; globalStep?: unknown };
      return typeof entry.globalStep === 'number' ? entry.globalStep <= position.globalStep : (entry.epoch as number) <= position.epoch;
    } catch {
      return false; // empty or cut short
    }
  });
  const next = kept.map((line) => `${line}\n`).join('');
  if (next !== text) await writeFileAtomic(file, next);
}

/** The progress line of a validation point of a `steps` run: as {@link describeEpoch}, by step. */
export function describeStep(r: EpochRecord, steps: number): string {
  return describeEpoch(r, 0).replace(/^epoch \d+\/0/, `step ${r.globalStep}/${steps} (epoch ${r.epoch})`);
}

/** The progress line of one epoch: loss, valid fraction, speed and the validation metrics. */
export function describeEpoch(r: EpochRecord, epochs: number): string {
  const parts = [`epoch ${r.epoch}/${epochs}`];
  if (r.loss !== null) parts.push(`loss ${r.loss.toFixed(4)}`);
  if (r.validFraction !== null) parts.push(`valid ${(100 * r.validFraction).toFixed(1)}%`);
  if (r.stepsPerSecond !== null) parts.push(`${r.stepsPerSecond.toFixed(2)} steps/s`);
  if (r.validation) {
    parts.push(`val R@1 ${(100 * (r.validation.recall['1'] ?? Number.NaN)).toFixed(2)}`);
    if (r.validation.mapAtR !== null) parts.push(`MAP@R ${(100 * r.validation.mapAtR).toFixed(2)}`);
    parts.push(`NMI ${(100 * r.validation.nmi).toFixed(2)}`);
    if (r.validation.nmiPlus !== null) parts.push(`NMI+ ${(100 * r.validation.nmiPlus).toFixed(2)}`);
  }
  return parts.join(', ');
}

/**
 * Runs a training as `config` says. See the file comment. The run holds its folder's lock throughout,
 * and a fresh start that fails before its first step leaves no run behind (run-folder.ts).
 */
export async function train(config: TrainConfig, options: TrainOptions = {}): Promise<TrainResult> {
  if (options.resume && options.overwrite) throw new DmlError('E_ARG', 'Give --resume (continue the run) or --overwrite (replace it), not both');
  const folder = await RunFolder.lock(path.resolve(config.out));
  try {
    return await trainInFolder(config, options, folder);
  } catch (err) {
    await folder.discardUnstarted();
    throw err;
  } finally {
    await folder.release();
  }
}

/** {@link train} in its locked folder; marks the folder started when the first step begins. */
async function trainInFolder(config: TrainConfig, options: TrainOptions, folder: RunFolder): Promise<TrainResult> {
  const log = options.log ?? (() => undefined);
  const { out } = folder;
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    log(`warning: ${message}`);
  };

  // ---- setup: everything that can fail, before the first step (run-setup.ts) ----
  if (!options.resume) await checkNewRunFolder(out, options.overwrite === true);
  const checkpointDir = path.join(out, CHECKPOINT);
  const run = await prepareRun(config, { resume: options.resume === true, checkpointDir, signal: options.signal, warn });
  config = run.config;
  const { loss, backend, engine, model, onnxNetwork, inputShape, trainData, validationData, preprocessing, sampler, resolvedConfig, backbonePreprocessing, resumedState } = run;
  const onGraph = engine.engine === 'onnx';
  const budget = runBudget(config);
  // Batches per sampler epoch (0-based), computed once each.
  const epochLengths = new Map<number, number>();
  const stepsOfEpoch = (epoch0: number): number => {
    let n = epochLengths.get(epoch0);
    if (n === undefined) epochLengths.set(epoch0, (n = sampler.batchesOfEpoch(epoch0).length));
    return n;
  };
  if (stepsOfEpoch(0) === 0) throw new DmlError('E_EMPTY', `the sampler gives no batch in an epoch (${sampler.describe().kind}); nothing to train`);
  /** Steps of the whole run: `steps`, or the batches of every epoch (only computed when a schedule needs it). */
  const totalSteps = (): number => {
    if (budget.unit === 'steps') return budget.steps;
    let n = 0;
    for (let e = 0; e < budget.epochs; e++) n += stepsOfEpoch(e);
    return n;
  };
  const scheduleSteps = needsTotalSteps(config.optimizer) || config.optimizer.warmup !== undefined ? totalSteps() : 0;
  checkSchedule(config.optimizer, scheduleSteps);
  const milestoneUnit = budget.unit;
  const lrAt = (step: number, epoch0: number): number => scheduledLearningRate(config.optimizer, { step, epoch: epoch0, totalSteps: scheduleSteps, milestoneUnit });
  const momentumAt = (step: number, epoch0: number): number | undefined => scheduledMomentum(config.optimizer, { step, epoch: epoch0, totalSteps: scheduleSteps, milestoneUnit });
  /** A `steps` run validates and saves a checkpoint every this many steps (and after the last). */
  const everySteps = budget.unit === 'steps' ? (config.validation.everySteps ?? Math.min(budget.steps, stepsOfEpoch(0))) : 0;

  // What a resume must share with the run it continues (run-identity.ts: all but the budget, out and
  // backend). A schedule over the run's total steps (cosine, onecycle, a warm-up) fixes the budget too.
  const { identity, hash: configHash } = runIdentity({ ...config, budgetUnit: budget.unit, scheduleSteps });
  /** The optimiser of the loss's own parameters (proxies, class weights), if it has any. */
  const lossOptimizer = LossOptimizer.create(loss, config.optimizer, lrAt(0, 0), FUSED_OPTIMIZER_BACKENDS.has(tf.getBackend()));
  let history: EpochRecord[] = [];
  /** Where the run stands: the epoch (1-based) of the last step taken, steps taken of it, steps taken in all. */
  let position: RunPosition = { epoch: 0, epochStep: 0, globalStep: 0 };
  /** The loss generator's state saved with the checkpoint; restored after the probe step below. */
  let resumedGenerator: number[] | undefined;
  if (options.resume) {
    const state = resumedState as (CheckpointState & Partial<RunPosition>) | undefined;
    if (!state) throw new DmlError('E_ARG', `Cannot resume from ${checkpointDir}: it holds no training state (not written by dml train)`);
    checkResumeIdentity(checkpointDir, state, { ...config, budgetUnit: budget.unit, scheduleSteps });
    const graphCheckpoint = state.graphSteps !== undefined;
    if (graphCheckpoint !== onGraph) {
      throw new DmlError(
        'E_ARG',
        `Cannot resume from ${checkpointDir} on backend ${config.backend}: it was written by ${graphCheckpoint ? 'the onnx backend' : 'a TensorFlow.js backend'}, whose optimiser state the other cannot continue; resume it with ${graphCheckpoint ? '--backend onnx' : 'a TensorFlow.js backend (not onnx)'}`,
      );
    }
    // Checkpoints of an epochs run before step budgets existed hold the epoch alone (always complete).
    position = {
      epoch: state.epoch,
      epochStep: state.epochStep ?? (state.epoch > 0 ? stepsOfEpoch(state.epoch - 1) : 0),
      globalStep: state.globalStep ?? Array.from({ length: state.epoch }, (_, e) => stepsOfEpoch(e)).reduce((a, b) => a + b, 0),
    };
    if (budget.unit === 'epochs' && position.epoch > budget.epochs) {
      throw new DmlError(
        'E_ARG',
        `Cannot resume from ${checkpointDir}: it is at epoch ${position.epoch}, past the ${budget.epochs} epoch(s) asked for; give --epochs ${position.epoch} or more`,
      );
    }
    if (budget.unit === 'steps' && position.globalStep > budget.steps) {
      throw new DmlError('E_ARG', `Cannot resume from ${checkpointDir}: it is at step ${position.globalStep}, past the ${budget.steps} step(s) asked for; give --steps ${position.globalStep} or more`);
    }
    history = state.history;
    if (loss.generator) {
      if (!state.lossGenerator) throw new DmlError('E_ARG', `Cannot resume from ${checkpointDir}: it holds no state of the ${loss.name} loss's random generator`);
      resumedGenerator = state.lossGenerator;
    }
  }
  const logFile = path.join(out, 'log.jsonl');
  /** The checkpoint's position: the log is cut back to it (`position` moves on with the steps). */
  const resumedAt = position;
  // Nothing in the run folder changes until every check has passed and, for a resume, the first step
  // has trained: a refused or failed resume leaves the folder byte for byte as it was.
  let folderReady = false;
  const prepareFolder = async (): Promise<void> => {
    if (folderReady) return;
    folderReady = true;
    if (options.resume) await truncateLog(logFile, resumedAt);
    else {
      folder.written = true;
      await rm(logFile, { force: true });
    }
    await writeFileAtomic(path.join(out, 'config.json'), `${JSON.stringify(resolvedConfig, null, 2)}\n`);
  };
  const writeLog = async (entry: Record<string, unknown>): Promise<void> => {
    await prepareFolder();
    await appendFile(logFile, `${JSON.stringify(entry)}\n`);
  };

  const variables = (): tf.Variable[] => [...(model?.trainableWeights ?? []).map((w) => w.read() as tf.Variable), ...loss.trainableVariables];
  const batch = batchStep({ model, loss, trainData, inputShape, preprocessing, augmentation: config.data.augmentation, variables });
  // The network on its engine, restored from the checkpoint for a resume (open-training-network.ts).
  const network = await openTrainingNetwork({
    engine: engine.engine,
    network: onnxNetwork
      ? {
          // The prepared network (cut, head, NHWC input); a resume trains on from its checkpoint's.
          onnx:
            onnxNetwork.resumed ??
            prepareEmbeddingNetwork(onnxNetwork.backbone as Uint8Array, {
              itemDims: [inputShape[2] as number, inputShape[0] as number, inputShape[1] as number],
              ...(onnxNetwork.spec.output !== undefined ? { output: onnxNetwork.spec.output } : {}),
              ...(onnxNetwork.spec.head !== undefined ? { head: onnxNetwork.spec.head } : {}),
              inputLayout: 'NHWC',
              seed: config.seed,
              name: onnxNetwork.spec.path,
            }),
          name: onnxNetwork.spec.path,
        }
      : { model: model as tf.LayersModel },
    optimizer: config.optimizer,
    initialLearningRate: lrAt(0, 0),
    loss,
    lossOptimizer,
    trainData,
    inputShape,
    batch,
    firstBatch: sampler.batchesOfEpoch(0)[0] as Int32Array,
    graph: {
      device: config.device ?? DEFAULT_DEVICE,
      microBatch: config.microBatch,
      freezeUpTo: onnxNetwork?.spec.freezeUpTo,
      backboneLearningRateScale: onnxNetwork?.spec.backboneLearningRateScale,
      frozenBatchNorm: onnxNetwork?.spec.frozenBatchNorm,
    },
    checkpointDir: options.resume ? checkpointDir : undefined,
    warn,
  });
  if (options.resume) log(`resuming after ${budget.unit === 'steps' ? `step ${position.globalStep}` : `epoch ${position.epoch}`}`);
  log(`engine: ${onGraph ? 'the graph trainer (onnxruntime)' : `TensorFlow.js (${network.backend})`}: ${engine.reason}`);

  // The probe drew from the loss's generator like the first step of a fresh run; a resumed run
  // continues from the generator state of its checkpoint instead.
  if (resumedGenerator) loss.generator?.setState(resumedGenerator);

  const validation = { config, out, validationData, trainData, loopGeometry: loss instanceof LoopLoss ? (loss.config['geometry'] as 'arc' | 'segment') : undefined };
  const embed = (data: TrainingData): Promise<EmbeddingSet> => network.embedAll(data);
  const budgetLabel = budget.unit === 'steps' ? `${budget.steps} steps` : `${budget.epochs} epochs`;
  const describe = (record: EpochRecord): string => (budget.unit === 'steps' ? describeStep(record, budget.steps) : describeEpoch(record, budget.epochs));
  const finished = (p: RunPosition): boolean =>
    budget.unit === 'steps' ? p.globalStep >= budget.steps : p.epoch >= budget.epochs && p.epochStep >= stepsOfEpoch(p.epoch - 1);
  const saveState = async (): Promise<void> => {
    const stepState = loss.stepState?.save();
    const state: CheckpointState & RunPosition = {
      ...position,
      ...(stepState ? { lossStepState: [...stepState.values] } : {}),
      history,
      configHash,
      identity,
      lossGenerator: loss.generator?.getState(),
      ...(backbonePreprocessing ? { backbonePreprocessing } : {}),
    };
    const held = network.checkpoint();
    const arrays = new Map([...(held.contents.arrays ?? []), ...(stepState?.arrays ?? [])]);
    await saveCheckpoint(checkpointDir, { ...held.contents, ...(arrays.size > 0 ? { arrays } : {}), state: { ...state, ...held.state } });
  };
  /** Validates, records, logs and checkpoints a finished period (an epoch, or `everySteps` steps). */
  const closePeriod = async (record: EpochRecord): Promise<void> => {
    if (record.steps > 0 && record.updates === 0) {
      const period = budget.unit === 'steps' ? `steps ${position.globalStep - record.steps + 1}-${position.globalStep}` : `epoch ${record.epoch}`;
      warn(
        `${period} trained nothing: none of its ${record.steps} batches had a valid tuple for the ${loss.name} loss (valid fraction ${record.validFraction ?? 0}); check the settings that make the images or embeddings alike (data.augmentation, data.image, the sampler, the model's pooling)`,
      );
    }
    const last = finished(position);
    const point: ValidationPoint =
      budget.unit === 'steps'
        ? { unit: 'step', index: position.globalStep, ordinal: history.length, last }
        : { unit: 'epoch', index: position.epoch, ordinal: position.epoch, last: last || position.epoch === 0 };
    await validateEpoch(validation, embed, point, record);
    history.push(record);
    await writeLog({ type: budget.unit === 'steps' ? 'validation' : 'epoch', ...record });
    await saveState();
    log(describe(record));
    await options.onValidation?.({ out, backend: network.backend, ...(network.device ? { provider: network.device.provider } : {}), history });
  };

  if (!options.resume) await prepareFolder();
  if (history.length === 0) {
    const untrained: EpochRecord = { epoch: 0, globalStep: 0, loss: null, validFraction: null, updates: 0, steps: 0, learningRate: lrAt(0, 0), seconds: 0, stepsPerSecond: null };
    await closePeriod(untrained);
  }

  // One period: the steps up to the next validation point (the end of an epoch, or everySteps steps).
  let period = { lossSum: 0, updates: 0, validSum: 0, totalSum: 0, steps: 0, start: performance.now() };
  let lr = lrAt(position.globalStep, Math.max(0, position.epoch - 1));
  while (!finished(position)) {
    if (options.signal?.aborted) throw new DmlError('E_CANCELLED', 'Training cancelled');
    // The epoch to continue: the current one if it has batches left, else the next.
    const epoch = position.epoch > 0 && position.epochStep < stepsOfEpoch(position.epoch - 1) ? position.epoch : position.epoch + 1;
    const batches = sampler.batchesOfEpoch(epoch - 1);
    const inputRng = epochRng(AUGMENTATION_STREAM ^ config.seed, epoch - 1);
    if (batches.length === 0) {
      // An epoch without a batch: an empty period of an epochs run; a steps run moves on.
      position = { epoch, epochStep: 0, globalStep: position.globalStep };
      if (budget.unit === 'epochs') {
        await closePeriod({ epoch, globalStep: position.globalStep, loss: null, validFraction: null, updates: 0, steps: 0, learningRate: lr, seconds: 0, stepsPerSecond: null });
        period = { lossSum: 0, updates: 0, validSum: 0, totalSum: 0, steps: 0, start: performance.now() };
      }
      continue;
    }
    const firstStep = epoch === position.epoch ? position.epochStep : 0;
    // A resume in the middle of an epoch replays the input draws of the steps already taken.
    for (let step = 0; step < firstStep; step++) batch.drawInputs(batches[step] as Int32Array, inputRng);
    const progress = createProgress(budget.unit === 'steps' ? `epoch ${epoch} (of ${budgetLabel})` : `epoch ${epoch}/${budget.epochs}`);
    for (let step = firstStep; step < batches.length; step++) {
      const rows = batches[step] as Int32Array;
      lr = lrAt(position.globalStep, epoch - 1);
      // A momentum the schedule sets (OneCycle's cycleMomentum) replaces the optimiser's for this step.
      const momentum = momentumAt(position.globalStep, epoch - 1);
      options.onBatch?.({ epoch, step: step + 1, labels: Array.from(rows, (r) => trainData.labelNames[trainData.labels[r] as number] as string) });
      // From here a failure (a divergence at this step) keeps the run and its last good checkpoint.
      folder.started = true;
      const { value: lossValue, validCount, totalCount } = await network.trainBatch(rows, batch.drawInputs(rows, inputRng), { learningRate: lr, momentum });
      if (!Number.isFinite(lossValue)) {
        throw new DmlError(
          'E_NUMERIC',
          `Training diverged at epoch ${epoch}, step ${step + 1}: the ${loss.name} loss is ${lossValue}; the last good checkpoint (${lastGood(history, budget.unit)}) is kept at ${checkpointDir}. Lower optimizer.learningRate.`,
        );
      }
      if (validCount > 0) {
        period.lossSum += lossValue;
        period.updates++;
      }
      period.validSum += validCount;
      period.totalSum += totalCount;
      period.steps++;
      position = { epoch, epochStep: step + 1, globalStep: position.globalStep + 1 };
      await writeLog({ type: 'step', epoch, step: step + 1, globalStep: position.globalStep, loss: validCount > 0 ? lossValue : null, validCount, totalCount, learningRate: lr, ...(momentum !== undefined ? { momentum } : {}) });
      progress.update(step + 1, batches.length);
      const endOfPeriod = budget.unit === 'steps' ? position.globalStep % everySteps === 0 || finished(position) : step + 1 === batches.length;
      if (!endOfPeriod) continue;
      const seconds = (performance.now() - period.start) / 1000;
      await network.settle();
      const badWeight = network.nonFiniteWeight();
      if (badWeight !== undefined) {
        throw new DmlError('E_NUMERIC', `Training diverged at epoch ${epoch}: weight ${badWeight} holds NaN or Inf; the last good checkpoint (${lastGood(history, budget.unit)}) is kept at ${checkpointDir}`);
      }
      const record: EpochRecord = {
        epoch,
        globalStep: position.globalStep,
        loss: period.updates > 0 ? period.lossSum / period.updates : null,
        validFraction: period.totalSum > 0 ? period.validSum / period.totalSum : null,
        updates: period.updates,
        steps: period.steps,
        learningRate: lr,
        seconds,
        stepsPerSecond: period.steps / seconds,
      };
      if (step + 1 === batches.length || finished(position)) progress.stop();
      await closePeriod(record);
      period = { lossSum: 0, updates: 0, validSum: 0, totalSum: 0, steps: 0, start: performance.now() };
      if (finished(position)) break;
    }
    progress.stop();
  }

  await prepareFolder(); // a resume with no epoch left to train still records its config and report
  const result: TrainResult = {
    out,
    backend: network.backend,
    engineSelection: engine,
    ...(network.device ? { device: network.device } : {}),
    history,
    config: resolvedConfig,
    warnings,
    preprocessing,
    ...(backbonePreprocessing ? { preprocessingSources: backbonePreprocessing.preprocessingSources } : {}),
    ...(backbonePreprocessing?.preprocessorConfig !== undefined ? { preprocessorConfig: backbonePreprocessing.preprocessorConfig } : {}),
  };
  await writeFileAtomic(
    path.join(out, 'report.json'),
    `${JSON.stringify({ format: 'dmlkit.train-report/1', createdAt: new Date().toISOString(), versions: collectVersions(), backendSelection: backend, configHash, ...result }, null, 2)}\n`,
  );
  return result;
}
