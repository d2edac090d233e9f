/**
 * @file Tests of the loss registry: every name builds its loss with the schema's defaults, unknown
 * names and bad options are named errors, and every loss works under tf.variableGrads (the trainer's
 * use) with finite gradients and no leaked tensors.
 */
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { z } from 'zod';
import { expectDmlErrorSync } from '../../helpers/expect-dml-error.js';
import { createLoss, LOSS_NAMES, lossSpecSchema, type LossSpec } from '../../../lib/train/losses/registry.js';
import { normalizeEmbeddings } from '../../../lib/train/similarity.js';
import { clusteredBatch, onCpuBackend } from './loss-test-support.js';

/** The options a loss needs besides its name (the required ones of the losses with a class table). */
const REQUIRED: Readonly<Record<string, Record<string, unknown>>> = Object.fromEntries(
  ['proxy-anchor', 'proxy-nca', 'normalized-softmax', 'arcface', 'cosface', 'subcenter-arcface', 'soft-triple'].map((name) => [name, { numClasses: 4, embeddingSize: 4 }]),
);

/** The spec of `name` with its required options only. */
const minimal = (name: string): LossSpec => ({ name, ...REQUIRED[name] }) as LossSpec;

describe('train/losses/registry', () => {
  onCpuBackend();

  it('registers the losses', () => {
    expect(LOSS_NAMES).to.deep.equal([
      'ep',
      'ephn',
      'epshn',
      'epen',
      'hp',
      'hphn',
      'batch-all',
      'npair',
      'triplet-margin',
      'contrastive',
      'multi-similarity',
      'lifted-structure',
      'margin',
      'direct-gradient',
      'dg-triplet-euclidean',
      'dg-triplet-cosine',
      'dg-circle',
      'dg-binomial-deviance',
      'dg-ms',
      'dg-dr-ms',
      'dg-sct',
      'dg-best',
      'loop-triplet',
      'loop-hphn',
      'loop-lifted',
      'loop-ms',
      'eps-triplet',
      'eps-margin',
      'eps-ms',
      'proxy-anchor',
      'proxy-nca',
      'normalized-softmax',
      'arcface',
      'cosface',
      'subcenter-arcface',
      'soft-triple',
      'circle',
      'supcon',
      'fast-ap',
    ]);
  });

  it("builds every loss with the schema's defaults, recorded in its config", () => {
    for (const name of LOSS_NAMES) {
      const loss = createLoss(minimal(name));
      expect(loss.name).to.equal(name);
      expect(loss.config).to.deep.equal(lossSpecSchema.parse(minimal(name)));
      for (const variable of loss.trainableVariables) variable.dispose();
    }
    expect(createLoss({ name: 'epshn' }).config).to.deep.equal({
      name: 'epshn',
      temperature: 0.1,
      order: 1,
      reduction: 'mean',
      validity: 'exists',
      duplicateThreshold: 0.9999,
      semiHardRule: 'strict',
    });
    expect(createLoss({ name: 'multi-similarity', beta: 40 }).config).to.include({ alpha: 2, beta: 40, base: 0.5, epsilon: 0.1 });
  });

  it('accepts a parsed (resolved) spec back, so a config can embed lossSpecSchema', () => {
    const resolved = lossSpecSchema.parse({ name: 'triplet-margin', miner: 'semihard' });
    expect(createLoss(resolved).config).to.deep.equal(resolved);
    const config = z.strictObject({ loss: lossSpecSchema }).parse({ loss: { name: 'ephn', order: 2 } });
    expect(config.loss).to.include({ name: 'ephn', order: 2, temperature: 0.1 });
    expect(() => z.toJSONSchema(lossSpecSchema)).to.not.throw();
  });

  it('names unknown losses (listing the known ones) and bad options', () => {
    expectDmlErrorSync(
      () => createLoss({ name: 'sphereface' } as unknown as LossSpec),
      'E_ARG',
      `Expected one of ${LOSS_NAMES.join(', ')} for loss.name but received "sphereface"`,
    );
    expectDmlErrorSync(() => createLoss(null as unknown as LossSpec), 'E_ARG', 'Expected an object with a name and options for loss but received null');
    expectDmlErrorSync(() => createLoss({} as LossSpec), 'E_ARG', /^Expected one of ep, .* for loss.name but received undefined$/);
    expectDmlErrorSync(
      () => createLoss({ name: 'multi-similarity', alpha: -2 }),
      'E_ARG',
      'Expected a number > 0 for loss.alpha but received -2',
    );
    expectDmlErrorSync(
      () => createLoss({ name: 'contrastive', margin: 1 } as unknown as LossSpec),
      'E_ARG',
      'Expected no unknown option (known: posMargin, negMargin, miner, memory) for loss.margin but received 1',
    );
    expectDmlErrorSync(
      () => createLoss({ name: 'margin', learnBeta: 'yes' } as unknown as LossSpec),
      'E_ARG',
      'Expected a boolean for loss.learnBeta but received "yes"',
    );
    expectDmlErrorSync(
      () => createLoss({ name: 'margin', numClasses: 2.5 }),
      'E_ARG',
      'Expected an integer or null for loss.numClasses but received 2.5',
    );
  });

  it('every loss gives finite gradients under tf.variableGrads and leaks no tensor', () => {
    const batch = clusteredBatch(9, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.8);
    const embeddings = tf.variable(tf.tensor2d(batch.values, [batch.rows, batch.dim]));
    for (const name of LOSS_NAMES) {
      const loss = createLoss((name === 'margin' ? { name, learnBeta: true, nu: 0.01 } : minimal(name)) as LossSpec);
      const before = tf.memory().numTensors;
      let validCount = 0;
      const { value, grads } = tf.variableGrads(() => {
        const out = loss.compute(normalizeEmbeddings(embeddings), batch.labels);
        validCount = out.validCount;
        return out.loss;
      }, [embeddings, ...loss.trainableVariables]);
      expect(validCount, name).to.be.above(0);
      expect(Number.isFinite(value.dataSync()[0]!), name).to.equal(true);
      const gradients = Object.values(grads);
      expect(gradients.length, name).to.equal(1 + loss.trainableVariables.length);
      for (const gradient of gradients) expect(Array.from(gradient.dataSync()).every(Number.isFinite), name).to.equal(true);
      tf.dispose([value, ...gradients]);
      expect(tf.memory().numTensors, name).to.equal(before);
      for (const variable of loss.trainableVariables) variable.dispose();
    }
    embeddings.dispose();
  });

  it('runs on the wasm backend (no gather or other kernel wasm lacks) with the cpu backend\'s values', async () => {
    await import('@tensorflow/tfjs-backend-wasm');
    const batch = clusteredBatch(10, [0, 0, 0, 1, 1, 2, 2, 3], 4, 0.8);
    const run = (): number[][] =>
      LOSS_NAMES.map((name) => {
        const loss = createLoss((name === 'margin' ? { name, learnBeta: true, numClasses: 4, nu: 0.01 } : minimal(name)) as LossSpec);
        const embeddings = tf.variable(tf.tensor2d(batch.values, [batch.rows, batch.dim]));
        const { value, grads } = tf.variableGrads(
          () => loss.compute(normalizeEmbeddings(embeddings), batch.labels).loss,
          [embeddings, ...loss.trainableVariables],
        );
        const numbers = [value.dataSync()[0]!, ...Object.values(grads).flatMap((g) => Array.from(g.dataSync()))];
        tf.dispose([value, ...Object.values(grads), embeddings, ...loss.trainableVariables]);
        return numbers;
      });
    const onCpu = run();
    await tf.setBackend('wasm');
    try {
      const onWasm = run();
      onCpu.forEach((expected, i) => {
        const worst = Math.max(...expected.map((v, j) => Math.abs(v - onWasm[i]![j]!)));
        expect(worst, LOSS_NAMES[i]).to.be.below(1e-4);
      });
    } finally {
      await tf.setBackend('cpu');
    }
  });
});
