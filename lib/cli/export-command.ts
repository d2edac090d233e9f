/**
 * @file `dml export <run-or-checkpoint> --out model.onnx [--backbone backbone.onnx] [--layout NCHW|NHWC]`:
 * exports a trained embedder to ONNX (see lib/export/export-model.ts). The file is written only after
 * onnxruntime reproduces TensorFlow.js within 1e-4 on a batch of inputs; progress goes to stderr and a
 * JSON summary (output, input, embedding dimension, parity) to stdout.
 */
import * as tf from '@tensorflow/tfjs';
import type { Command } from 'commander';
import { exportCheckpoint } from '../export/export-model.js';
import { parseChoice } from './parse-options.js';

interface ExportFlags {
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
    .option('--layout <layout>', 'image input layout of a model without a backbone: NCHW or NHWC (default NCHW)')
    .action(async (checkpoint: string, flags: ExportFlags) => {
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
    });
}
