/**
 * @file Tests of the training of a loss's own parameters (lib/train/loss-optimizer.ts): the step of
 * the parameter group (the scaled rate and the decoupled decay) by its formula; a Proxy-Anchor run
 * resumed from its checkpoint equals an uninterrupted one bit for bit, proxies included, on the cpu
 * backend (tfjs's Adam) and the ort-cpu backend (the fused Adam), the network's optimiser holding no
 * slot of the proxies; `dml export` writes the network without them; a training set with more classes
 * than the loss's table fails before anything is written. (The graph trainer's path, killed and
 * resumed, is in run-folder.spec.ts.)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { exportCheckpoint } from '../../lib/export/export-model.js';
import { loadCheckpoint } from '../../lib/train/checkpoint-io.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { LossOptimizer } from '../../lib/train/loss-optimizer.js';
import { createLoss } from '../../lib/train/losses/registry.js';
import { train } from '../../lib/train/trainer.js';
import { expectDmlError, expectDmlErrorSync } from '../helpers/expect-dml-error.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const stepLosses = (out: string): number[] =>
  readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; loss: number })
    .filter((e) => e.type === 'step')
    .map((e) => e.loss);

describe('train: the loss parameters beside the network', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'dml-loss-parameters-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('steps them at learningRateScale x the rate, then decays them at that rate (SGD: p ← (p − 10·0.1·g)(1 − 10·0.1·0.5))', () => {
    const loss = createLoss({ name: 'proxy-anchor', numClasses: 2, embeddingSize: 3, learningRateScale: 10, weightDecay: 0.5 });
    const [proxies] = loss.trainableVariables as [tf.Variable];
    const before = Float64Array.from(proxies.dataSync());
    const optimizer = LossOptimizer.create(loss, parseTrainConfig(tinyTrainConfig('x', { optimizer: { kind: 'sgd', learningRate: 0.1 } }), 'test').optimizer, 0.1, false)!;
    const gradient = tf.tensor2d([0.5, -1, 2, 0.25, 0, -0.75], [2, 3]);
    const other = tf.scalar(7);
    const rest = optimizer.applyOwnGradients({ [proxies.name]: gradient, network: other });
    // The network's gradients are left for the network's optimiser.
    expect(Object.keys(rest)).to.deep.equal(['network']);
    optimizer.decay(0.1);
    const g = gradient.dataSync();
    const after = proxies.dataSync();
    for (let i = 0; i < 6; i++) expect(after[i]).to.be.closeTo((before[i]! - 1 * g[i]!) * (1 - 1 * 0.5), 1e-6);
    // A rate set for the next step is scaled too: 0.02 x 10.
    optimizer.setLearningRate(0.02);
    const now = Float64Array.from(proxies.dataSync());
    optimizer.applyOwnGradients({ [proxies.name]: gradient });
    for (let i = 0; i < 6; i++) expect(proxies.dataSync()[i]).to.be.closeTo(now[i]! - 0.2 * g[i]!, 1e-6);
    // A momentum a schedule sets (OneCycle's cycleMomentum) reaches this parameter group too.
    const adam = LossOptimizer.create(loss, parseTrainConfig(tinyTrainConfig('x'), 'test').optimizer, 0.1, false)!;
    adam.setMomentum(0.85);
    expect((adam.optimizer as unknown as { beta1: number }).beta1).to.equal(0.85);
    tf.dispose([gradient, other, proxies]);
    // A loss without parameters has no such optimiser.
    expect(LossOptimizer.create(createLoss({ name: 'ephn' }), parseTrainConfig(tinyTrainConfig('x'), 'test').optimizer, 0.1, false)).to.equal(undefined);
  });

  const proxyRun = (out: string, backend: string, epochs: number): TrainConfigInput =>
    tinyTrainConfig(out, {
      backend,
      epochs,
      loss: { name: 'proxy-anchor', numClasses: 5, learningRateScale: 100, weightDecay: 0.0001, seed: 3 },
      optimizer: { kind: 'adam', learningRate: 0.001, weightDecay: 0.01 },
    }) as TrainConfigInput;

  for (const backend of ['cpu', 'ort-cpu'] as const) {
    it(`${backend}: a resumed Proxy-Anchor run (proxies at 100x, their own decay) equals an uninterrupted one, proxies bit for bit`, async () => {
      const [whole, split] = [path.join(dir, `${backend}-whole`), path.join(dir, `${backend}-split`)];
      await train(parseTrainConfig(proxyRun(whole, backend, 2), 'test'));
      await train(parseTrainConfig(proxyRun(split, backend, 1), 'test'));
      await train(parseTrainConfig(proxyRun(split, backend, 2), 'test'), { resume: true });
      expect(stepLosses(split)).to.deep.equal(stepLosses(whole));
      const [a, b] = [await loadCheckpoint(path.join(whole, 'checkpoints', 'last')), await loadCheckpoint(path.join(split, 'checkpoints', 'last'))];
      const proxies = a.arrays?.get('loss/0') as Float32Array;
      expect(proxies).to.have.length(5 * 4);
      expect(Array.from(b.arrays?.get('loss/0') as Float32Array)).to.deep.equal(Array.from(proxies));
      expect(Array.from(b.model.getWeights()[0]!.dataSync())).to.deep.equal(Array.from(a.model.getWeights()[0]!.dataSync()));
      // The proxies' optimiser state (its step count and moments; restored by position, so the slot names, made
      // from this process's variable ids, may differ), bit for bit, at the scaled rate 0.001 x 100.
      expect(Buffer.from(b.lossOptimizer!.data).equals(Buffer.from(a.lossOptimizer!.data))).to.equal(true);
      expect(JSON.parse(a.lossOptimizer!.json).config.learningRate).to.be.closeTo(0.1, 1e-9);
      // The network's optimiser holds slots for the network's 4 weights only (Adam: m and v each, plus its step count).
      expect((await a.optimizer!.getWeights()).length).to.equal(1 + 2 * 4);
    });
  }

  it('dml export writes the network alone: no proxy table in the ONNX file', async () => {
    const out = path.join(dir, 'cpu-whole');
    const file = path.join(dir, 'exported.onnx');
    await exportCheckpoint(out, { out: file });
    const graph = readOnnxGraph(new Uint8Array(readFileSync(file)), file);
    const shapes = [...graph.initializers.values()].map((t) => t.dims.join('x'));
    expect(shapes).to.include('784x16').and.not.include('5x4');
  });

  it('a training set with more classes than the table, or no numClasses, fails before any work (the first names the label without a proxy)', async () => {
    const out = path.join(dir, 'too-few');
    const config = tinyTrainConfig(out, { loss: { name: 'proxy-anchor', numClasses: 3 } }) as TrainConfigInput;
    await expectDmlError(
      train(parseTrainConfig(config, 'test')),
      'E_ARG',
      'Expected at most 3 training classes for loss.numClasses (the proxy-anchor loss\'s class table) but the training data has 5: label "pullover" (class 3) is not in the table; set loss.numClasses to 5',
    );
    expect(existsSync(out)).to.equal(false);
    // numClasses missing: the config fails to parse, with the loss's options.
    const missing = tinyTrainConfig(out, { loss: { name: 'arcface' } }) as TrainConfigInput;
    expectDmlErrorSync(() => parseTrainConfig(missing, 'test'), 'E_ARG', 'test: loss.numClasses: Invalid input: expected number, received undefined');
    expect(existsSync(out)).to.equal(false);
  });
});
