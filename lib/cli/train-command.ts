/**
 * @file `dml train --config train.json [key=value ...]`: trains an embedding model (see
 * lib/train/trainer.ts). `key=value` arguments set any field (config-overrides.ts), flags then override theirs; the resolved config is validated before any work starts. The
 * work is in train-run.ts, loaded when the command runs (it loads TensorFlow.js).
 */
import type { Command } from 'commander';
import { TRAINING_BACKENDS } from '../train/training-backends.js';
import { DEVICE_HELP } from '../onnx/devices.js';
import { explainMissingTensorflow } from '../util/optional-deps.js';

/** Raw option values of `dml train`. */
export interface TrainFlags {
  config: string;
  epochs?: string;
  steps?: string;
  seed?: string;
  out?: string;
  backend?: string;
  device?: string;
  microBatch?: string;
  resume?: boolean;
  overwrite?: boolean;
}

/** Registers `train` on the program. */
export function registerTrainCommand(program: Command): void {
  program
    .command('train')
    .description('Train an embedding model with a metric-learning loss (TensorFlow.js)')
    .argument('[overrides...]', 'config fields to set, key=value: a dotted path and a JSON value or a string (e.g. optimizer.learningRate=0.001 model.hidden=[64,32]); applied before the flags')
    .requiredOption('--config <file.json>', 'training configuration (see docs/configuration.md)')
    .option('--epochs <n>', 'train this many epochs (replaces the config\'s epochs or steps; default: the config\'s)')
    .option('--steps <n>', 'train this many optimiser steps (replaces the config\'s epochs or steps; default: the config\'s)')
    .option('--seed <n>', 'override seed (default: the config\'s)')
    .option('--out <dir>', 'override the output folder (default: the config\'s)')
    .option('--backend <name>', `override backend: ${TRAINING_BACKENDS.join(', ')} (onnx: the graph trainer on onnxruntime; auto picks it unless @tensorflow/tfjs-node is installed) (default: the config's)`)
    .option('--device <name>', `the onnx backend's device: ${DEVICE_HELP} (default: the config's, else auto)`)
    .option('--micro-batch <n>', "the onnx backend runs each batch in micro-batches of at most n items, the gradients summed and the loss on the whole batch (default: the config's, else none)")
    .option('--resume', 'continue from <out>/checkpoints/last')
    .option('--overwrite', 'replace the run the output folder holds (without it, or --resume, such a folder is refused)')
    .action(async (overrides: string[], flags: TrainFlags) => {
      const { runTrain } = await import('./train-run.js').catch((err: unknown) => {
        throw explainMissingTensorflow(err, 'dml train');
      });
      await runTrain(flags, overrides);
    });
}
