/**
 * @file The work of `dml train` (train-command.ts declares the command): reads the config, applies the
 * flags, validates, and trains. Loaded only when the command runs, as it loads TensorFlow.js.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError } from '../errors.js';
import { readRegularFile } from '../util/regular-file.js';
import { parseTrainConfig } from '../train/config.js';
import { train } from '../train/trainer.js';
import { parsePositiveInt, parseSeed } from './parse-options.js';
import type { TrainFlags } from './train-command.js';
import { writeTrainingReportHtml } from '../train/training-html.js';
import { applyOverrides } from './config-overrides.js';

/** Runs `dml train` with the flags commander parsed. */
export async function runTrain(flags: TrainFlags, overrides: readonly string[] = []): Promise<void> {
  const text = (await readRegularFile(flags.config, 'config')).toString('utf8');
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text.replace(/^\uFEFF/, '')) as Record<string, unknown>; // a byte-order mark is allowed
  } catch (err) {
    throw new DmlError('E_ARG', `${flags.config} is not valid JSON: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new DmlError('E_ARG', `${flags.config}: expected a JSON object of config fields`);
  raw = applyOverrides(raw, overrides);
  if (flags.epochs !== undefined && flags.steps !== undefined) {
    throw new DmlError('E_ARG', `--epochs and --steps: give one budget, got --epochs ${flags.epochs} and --steps ${flags.steps}`);
  }
  // A budget flag replaces the config's budget, whichever kind it is.
  if (flags.epochs !== undefined) {
    raw['epochs'] = parsePositiveInt(flags.epochs, '--epochs');
    delete raw['steps'];
  }
  if (flags.steps !== undefined) {
    raw['steps'] = parsePositiveInt(flags.steps, '--steps');
    delete raw['epochs'];
  }
  if (flags.seed !== undefined) raw['seed'] = parseSeed(flags.seed, '--seed');
  if (flags.out !== undefined) raw['out'] = flags.out;
  if (flags.backend !== undefined) raw['backend'] = flags.backend;
  if (flags.device !== undefined) raw['device'] = flags.device;
  if (flags.microBatch !== undefined) raw['microBatch'] = parsePositiveInt(flags.microBatch, '--micro-batch');
  const config = parseTrainConfig(raw, overrides.length > 0 ? `${flags.config} with ${overrides.join(' ')}` : flags.config);
  tf.enableProdMode(); // no debug-mode checks, and no console banner about tfjs-node
  // report.html follows the run: rewritten at every validation point, and once more when it ends.
  let page: { out: string; backend: string; provider?: string } | undefined;
  let result;
  try {
    result = await train(config, {
      resume: flags.resume === true,
      overwrite: flags.overwrite === true,
      log: (line) => process.stderr.write(`${line}\n`),
      onValidation: async ({ history: _history, ...point }) => {
        page = point;
        await writeTrainingReportHtml(point.out, { state: 'training', ...point });
      },
    });
  } catch (err) {
    // A run that wrote its page says on it that it stopped, and why (a refused resume wrote none: its folder stays as it was).
    if (page !== undefined) await writeTrainingReportHtml(page.out, { ...page, state: 'stopped', message: (err as Error).message }).catch(() => undefined);
    throw err;
  }
  await writeTrainingReportHtml(result.out, { state: 'finished' });
  const last = result.history[result.history.length - 1];
  process.stdout.write(`${JSON.stringify({ out: result.out, backend: result.backend, last }, null, 2)}\n`);
}
