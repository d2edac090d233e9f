/**
 * @file `sgd`: plain stochastic gradient descent, w ← w − lr g; with `weightDecay`, decoupled (SGDW).
 */
import * as tf from '@tensorflow/tfjs';
import { FusedSgdOptimizer } from '../../engine/tfjs/fused-optimizer.js';
import { defineOptimizer } from './optimizer-entry.js';

export const SGD = defineOptimizer({
  name: 'sgd',
  tfjs: (settings, lr, options) => (options?.fused ? new FusedSgdOptimizer(lr, { rate: settings.weightDecay, appliesTo: options.decayed }) : tf.train.sgd(lr)),
  graph: (settings) => ({ kind: 'sgd', weightDecay: settings.weightDecay, decoupledWeightDecay: true }),
});
