/**
 * @file The optimiser registry (lib/train/optimizers/): every `optimizer.kind` has a TensorFlow.js form
 * (tfjs's optimiser, or the fused one) and a graph-trainer form, and the config takes its kinds from it.
 */
import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { OPTIMIZER_KINDS, optimizerEntry } from '../../../lib/train/optimizers/registry.js';
import { optimizerSchema } from '../../../lib/train/optimizer.js';
import { isFusedOptimizer } from '../../../lib/engine/tfjs/fused-optimizer.js';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';

describe('train/optimizers registry', () => {
  const settings = { momentum: 0.8, weightDecay: 0.01 };

  it('lists sgd, momentum and adam, the kinds the config accepts', () => {
    expect(OPTIMIZER_KINDS).to.deep.equal(['sgd', 'momentum', 'adam']);
    for (const kind of OPTIMIZER_KINDS) expect(optimizerSchema.parse({ kind, learningRate: 0.1 }).kind).to.equal(kind);
    expect(optimizerSchema.safeParse({ kind: 'rmsprop', learningRate: 0.1 }).success).to.equal(false);
  });

  it("gives torch.optim's settings to the graph trainer, the decay decoupled", () => {
    expect(optimizerEntry('sgd').graph({ kind: 'sgd', ...settings })).to.deep.equal({ kind: 'sgd', weightDecay: 0.01, decoupledWeightDecay: true });
    expect(optimizerEntry('momentum').graph({ kind: 'momentum', ...settings })).to.deep.equal({ kind: 'sgd', momentum: 0.8, weightDecay: 0.01, decoupledWeightDecay: true });
    expect(optimizerEntry('adam').graph({ kind: 'adam', ...settings })).to.deep.equal({ kind: 'adamw', weightDecay: 0.01 });
    expect(optimizerEntry('adam').graph({ kind: 'adam', momentum: 0.9, weightDecay: 0 })).to.deep.equal({ kind: 'adam' });
  });

  it("builds tfjs's optimiser, or the fused one that applies the decay itself", () => {
    const classes = { sgd: 'SGD', momentum: 'Momentum', adam: 'Adam' } as const;
    for (const kind of OPTIMIZER_KINDS) {
      const plain = optimizerEntry(kind).tfjs({ kind, ...settings }, 0.1, undefined);
      const fused = optimizerEntry(kind).tfjs({ kind, ...settings }, 0.1, { fused: true, decayed: () => true });
      expect([plain.getClassName(), isFusedOptimizer(plain), isFusedOptimizer(fused)], kind).to.deep.equal([classes[kind], false, true]);
      expect(plain).to.be.instanceOf(tf.Optimizer);
      plain.dispose();
      fused.dispose();
    }
  });

  it('names the kinds when asked for another', () => {
    expectDmlErrorSync(() => optimizerEntry('rmsprop'), 'E_ARG', 'optimizer.kind: expected one of sgd, momentum, adam, got rmsprop');
  });
});
