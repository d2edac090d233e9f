/**
 * @file The work of `dml export` (export-command.ts declares the command): exports the checkpoint and
 * prints the summary. Loaded only when the command runs, as it loads TensorFlow.js.
 */
import * as tf from '@tensorflow/tfjs';
import { exportCheckpoint } from '../export/export-model.js';
import type { ExportFlags } from './export-command.js';
import { parseChoice } from './parse-options.js';

/** Runs `dml export <checkpoint>` with the flags commander parsed. */
export async function runExport(checkpoint: string, flags: ExportFlags): Promise<void> {
  const layout = flags.layout === undefined ? undefined : parseChoice(flags.layout.toUpperCase(), ['NCHW', 'NHWC'] as const, '--layout');
  tf.enableProdMode();
  const result = await exportCheckpoint(checkpoint, {
    out: flags.out,
    ...(flags.backbone !== undefined ? { backbone: flags.backbone } : {}),
    ...(layout !== undefined ? { layout } : {}),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const summary = {
    out: result.out,
    checkpoint: result.checkpoint,
    input: { name: result.inputName, dims: result.inputDims },
    output: { name: result.outputName, embeddingDim: result.embeddingDim },
    preprocessing: result.preprocessing,
    ...(result.backbone !== undefined ? { backbone: result.backbone } : {}),
    parity: result.parity,
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}
