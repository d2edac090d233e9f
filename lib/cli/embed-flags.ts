/**
 * @file The flags of every command that embeds images with an ONNX model (`dml eval`, `dml index
 * build|add`): declared once, parsed once, as preprocessing-flags.ts does for the preprocessing.
 */
import type { Command } from 'commander';
import { DmlError } from '../errors.js';
import type { EmbedderOptions } from '../embed/embedder.js';
import { DEFAULT_DEVICE, DEVICE_CHOICES, DEVICE_HELP, NORMALIZATION_CHOICES } from '../onnx/devices.js';
import { TOKEN_POOLINGS } from '../embed/model-signature.js';
import { parseChoice, parseParallelism, parsePositiveInt } from './parse-options.js';
import { printWarning } from './warning.js';
import { DEFAULT_EMBED_BATCH_SIZE } from '../util/defaults.js';

/** Raw values of the embedding flags. */
export interface EmbedFlags {
  device: string;
  threads?: string;
  normalization?: string;
  batchSize: string;
  workers?: string;
  outputName?: string;
  pooling?: string;
  skipBadImages?: boolean;
  limitInputPixels?: string;
}

/** Declares the embedding flags on `command`; `batchSizeHelp` says what a batch is for this command. */
export function addEmbedOptions(command: Command, batchSizeHelp = 'images per inference call'): Command {
  return command
    .option('--device <device>', DEVICE_HELP, DEFAULT_DEVICE)
    .option('--threads <n>', 'onnxruntime intra-op threads (default: onnxruntime\'s choice)')
    .option('--normalization <where>', 'where batches are normalised: host (in JavaScript) or device (uint8 crops to the execution provider, normalised by a graph in front of the model)', 'host')
    .option('--batch-size <n>', batchSizeHelp, String(DEFAULT_EMBED_BATCH_SIZE))
    .option('--workers <n>', 'image decode processes, 0 = decode in the main process (default: one per core for 256 images or more)')
    .option('--skip-bad-images', 'skip and report undecodable images instead of failing')
    .option('--limit-input-pixels <n>', 'largest image (width x height) accepted; guards against decompression bombs (default: 40000000)');
}

/** Help of `--pooling`, shared by the commands that take it. */
export const POOLING_HELP = 'pool a token output [N, T, D] into one vector: cls (token 0), mean or max (over the patch tokens, the class token excluded)';

/** The embedder options of the flags (device, normalisation, batch size, threads, pooling). Errors: E_ARG naming the flag. */
export function embedderOptions(flags: EmbedFlags): EmbedderOptions {
  return {
    ...(flags.pooling !== undefined ? { pooling: parseChoice(flags.pooling, TOKEN_POOLINGS, '--pooling') } : {}),
    device: parseChoice(flags.device, DEVICE_CHOICES, '--device'),
    ...(flags.normalization !== undefined ? { normalization: parseChoice(flags.normalization, NORMALIZATION_CHOICES, '--normalization') } : {}),
    batchSize: parsePositiveInt(flags.batchSize, '--batch-size'),
    ...(flags.threads !== undefined ? { threads: parseParallelism(flags.threads, '--threads', 1, printWarning) } : {}),
  };
}

/** `--limit-input-pixels` as an option field, or nothing for the decoder's default. */
export function limitInputPixels(flags: EmbedFlags): { limitInputPixels?: number } {
  return flags.limitInputPixels !== undefined ? { limitInputPixels: parsePositiveInt(flags.limitInputPixels, '--limit-input-pixels') } : {};
}

/** `--workers`, or undefined for the embedder's default (one decode process per core for large sets); bounded as parseParallelism says. */
export function decodeWorkers(flags: EmbedFlags): number | undefined {
  return flags.workers !== undefined ? parseParallelism(flags.workers, '--workers', 0, printWarning) : undefined;
}

/**
 * `err` with a hint added when it is an undecodable image (E_IMAGE) and `--skip-bad-images` was not
 * given: the same one line, ending with how to leave such images out. Any other error unchanged.
 */
export function withSkipBadImagesHint(err: unknown, flags: EmbedFlags): unknown {
  if (err instanceof DmlError && err.code === 'E_IMAGE' && flags.skipBadImages !== true) {
    return new DmlError('E_IMAGE', `${err.message}; pass --skip-bad-images to leave undecodable images out (they are listed in the report)`, { cause: err });
  }
  return err;
}
