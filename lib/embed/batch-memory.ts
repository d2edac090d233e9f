/**
 * @file The memory one batch of model input takes, checked before anything is allocated: a batch
 * size so large that its float32 input cannot be held (`--batch-size 1000000000`) is refused with one
 * line naming the sizes, instead of failing deep inside with "Invalid typed array length".
 */
import { totalmem } from 'node:os';
import { invalidParameterError } from '../errors.js';

/** The largest batch input accepted: a quarter of the machine's memory, and never above 4 GiB. */
export function maxBatchInputBytes(): number {
  return Math.min(Math.floor(totalmem() / 4), 4 * 2 ** 30);
}

/** Refuses a `batchSize` whose float32 input of `height` x `width` x `channels` images exceeds {@link maxBatchInputBytes}. Errors: E_ARG. */
export function checkBatchInputMemory(batchSize: number, image: { height: number; width: number; channels: number }): void {
  const perImage = image.height * image.width * image.channels * 4;
  const limit = maxBatchInputBytes();
  if (batchSize * perImage <= limit) return;
  const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  throw invalidParameterError(
    'batchSize',
    `a batch whose float32 input fits in memory: at most ${Math.floor(limit / perImage)} images of ${image.height}x${image.width}x${image.channels} (${mib(limit)}, a quarter of this machine's memory or 4 GiB)`,
    `${batchSize} (${mib(batchSize * perImage)})`,
  );
}
