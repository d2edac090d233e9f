/**
 * @file A resumed run's loss state from its checkpoint: the loss's own parameters and their optimiser
 * (loss-optimizer.ts), and its per-step state (a cross-batch memory, losses/cross-batch-memory.ts).
 * Both training engines restore it when they open a network from a checkpoint.
 */
import type { LossOptimizer } from './loss-optimizer.js';
import type { OptimizerStateFiles } from './checkpoint-io.js';
import type { MetricLoss } from './losses/metric-loss.js';

/** Puts the loss state of checkpoint `loaded` (read from `where`) back into `loss` and `lossOptimizer`. */
export async function restoreLossState(
  loss: MetricLoss,
  lossOptimizer: LossOptimizer | undefined,
  loaded: { arrays?: Map<string, Float32Array> | undefined; lossOptimizer?: OptimizerStateFiles | undefined; state?: unknown },
  where: string,
): Promise<void> {
  const state = loaded.state as { lossVariables?: number[][]; lossStepState?: number[] } | undefined;
  await lossOptimizer?.restore(loaded, state?.lossVariables, where);
  loss.stepState?.restore({ arrays: loaded.arrays ?? new Map(), values: state?.lossStepState ?? [] }, where);
}
