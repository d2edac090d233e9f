/**
 * @file `dml train --config train.json`: trains an embedding model (see lib/train/trainer.ts).
 * Flags override the config's fields; the resolved config is validated before any work starts.
 */
import { readFile } from 'node:fs/promises';
import * as tf from '@tensorflow/tfjs';
import type { Command } from 'commander';
import { DmlError } from '../errors.js';
import { parseTrainConfig } from '../train/config.js';
import { train } from '../train/trainer.js';
import { parsePositiveInt, parseSeed } from './parse-options.js';

interface TrainFlags {
  config: string;
  epochs?: string;
  seed?: string;
  out?: string;
  backend?: string;
  resume?: boolean;
}

/** Registers `train` on the program. */
export function registerTrainCommand(program: Command): void {
  program
    .command('train')
    .description('Train an embedding model with a metric-learning loss (TensorFlow.js)')
    .requiredOption('--config <file.json>', 'training configuration (see README: Training)')
    .option('--epochs <n>', 'override epochs')
    .option('--seed <n>', 'override seed')
    .option('--out <dir>', 'override the output folder')
    .option('--backend <name>', 'override backend: auto, tfjs-node-gpu, tfjs-node, ort-cpu, wasm, cpu')
    .option('--resume', 'continue from <out>/checkpoints/last')
    .action(async (flags: TrainFlags) => {
      let text: string;
      try {
        text = await readFile(flags.config, 'utf8');
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        throw new DmlError(e.code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_IO', `Cannot read config ${flags.config}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
      }
      let raw: Record<string, unknown>;
      try {
        raw = JSON.parse(text) as Record<string, unknown>;
      } catch (err) {
        throw new DmlError('E_ARG', `${flags.config} is not valid JSON: ${(err as Error).message}`);
      }
      if (flags.epochs !== undefined) raw['epochs'] = parsePositiveInt(flags.epochs, '--epochs');
      if (flags.seed !== undefined) raw['seed'] = parseSeed(flags.seed, '--seed');
      if (flags.out !== undefined) raw['out'] = flags.out;
      if (flags.backend !== undefined) raw['backend'] = flags.backend;
      const config = parseTrainConfig(raw, flags.config);
      tf.enableProdMode(); // no debug-mode checks, and no console banner about tfjs-node
      const result = await train(config, { resume: flags.resume === true, log: (line) => process.stderr.write(`${line}\n`) });
      const last = result.history[result.history.length - 1];
      process.stdout.write(`${JSON.stringify({ out: result.out, backend: result.backend, last }, null, 2)}\n`);
    });
}
