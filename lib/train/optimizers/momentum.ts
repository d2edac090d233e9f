/**
 * @file `momentum`: SGD with (heavy-ball) momentum, `optimizer.momentum` (default 0.9): a ← μ a + g,
 * w ← w − lr a, as tfjs's MomentumOptimizer and torch.optim's SGD without dampening; with
 * `weightDecay`, decoupled (SGDW).
 */
import * as tf from '@tensorflow/tfjs';
import { FusedMomentumOptimizer } from '../../engine/tfjs/fused-optimizer.js';
import { defineOptimizer } from './optimizer-entry.js';

export const MOMENTUM = defineOptimizer({
  name: 'momentum',
  tfjs: (settings, lr, options) =>
    options?.fused ? new FusedMomentumOptimizer(lr, settings.momentum, { rate: settings.weightDecay, appliesTo: options.decayed }) : tf.train.momentum(lr, settings.momentum),
  graph: (settings) => ({ kind: 'sgd', momentum: settings.momentum, weightDecay: settings.weightDecay, decoupledWeightDecay: true }),
});
