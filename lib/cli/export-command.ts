/**
 * @file `dml export <run-or-checkpoint> --out model.onnx [--backbone backbone.onnx] [--layout NCHW|NHWC]`:
 * exports a trained embedder to ONNX (see lib/export/export-model.ts). The file is written only after
 * onnxruntime reproduces TensorFlow.js within 1e-4 on a batch of inputs; progress goes to stderr and a
 * JSON summary (output, input, embedding dimension, parity) to stdout. The work is in export-run.ts,
 * loaded when the command runs (it loads TensorFlow.js).
 */
import type { Command } from 'commander';
import { explainMissingTensorflow } from '../util/optional-deps.js';

/** Raw option values of `dml export`. */
export interface ExportFlags {
  out: string;
  backbone?: string;
  layout?: string;
}

/** Registers `export` on the program. */
export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description('Export a trained embedder (a dml train run or checkpoint) to ONNX, checked against TensorFlow.js')
    .argument('<checkpoint>', 'a dml train output folder, or a checkpoint folder in it (e.g. <out>/checkpoints/last)')
    .requiredOption('--out <file.onnx>', 'the ONNX file to write')
    .option('--backbone <file.onnx>', "frozen ONNX backbone the head was trained on (default: the run config's data.features.backbone)")
    .option('--layout <layout>', 'image input layout of a model without a backbone: NCHW or NHWC (default: NCHW)')
    .action(async (checkpoint: string, flags: ExportFlags) => {
      const { runExport } = await import('./export-run.js').catch((err: unknown) => {
        throw explainMissingTensorflow(err, 'dml export');
      });
      await runExport(checkpoint, flags);
    });
}
