/**
 * @file `adam`: Adam (Kingma & Ba 2015). TensorFlow.js's (ε 1e-7; the fused one on ort-cpu computes
 * the same numbers) and, on the graph trainer, torch.optim's (ε 1e-8); with `weightDecay`, the
 * decoupled decay of AdamW (Loshchilov & Hutter 2019).
 */
import * as tf from '@tensorflow/tfjs';
import { FusedAdamOptimizer } from '../../engine/tfjs/fused-optimizer.js';
import { defineOptimizer } from './optimizer-entry.js';

export const ADAM = defineOptimizer({
  name: 'adam',
  tfjs: (settings, lr, options) => (options?.fused ? new FusedAdamOptimizer(lr, { rate: settings.weightDecay, appliesTo: options.decayed }) : tf.train.adam(lr)),
  graph: (settings) => (settings.weightDecay > 0 ? { kind: 'adamw', weightDecay: settings.weightDecay } : { kind: 'adam' }),
});
