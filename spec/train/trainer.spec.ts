import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { train } from '../../lib/train/trainer.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

/** Five Fashion-MNIST classes of the embedded default set train; the other five are held out. */
function tinyConfig(out: string, overrides: Partial<TrainConfigInput> = {}): TrainConfigInput {
  return {
    data: { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 28, width: 28, channels: 1 } },
    model: { kind: 'mlp', inputDim: 784, hidden: [32], embeddingDim: 4 },
    loss: { name: 'ephn' },
    sampler: { kind: 'filled', groupSize: 6, batchSize: 30 },
    optimizer: { kind: 'adam', learningRate: 0.01 },
    epochs: 3,
    backend: 'cpu',
    scatter: { every: 1, set: 'validation', maxPoints: 200 },
    out,
    ...overrides,
  };
}

const stepLosses = (out: string): Array<number | null> =>
  readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; loss: number | null })
    .filter((e) => e.type === 'step')
    .map((e) => e.loss);

describe('train', function () {
  this.timeout(120000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-train-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('raises held-out Recall@1 and MAP@R over the untrained model, and writes its outputs', async () => {
    const out = path.join(dir, 'run');
    const result = await train(parseTrainConfig(tinyConfig(out), 'test'));
    const first = result.history[0]!;
    const last = result.history[result.history.length - 1]!;
    expect(result.history.map((r) => r.epoch)).to.deep.equal([0, 1, 2, 3]);
    expect(first.loss).to.equal(null);
    expect(last.validation!.recall['1']!).to.be.above(first.validation!.recall['1']! + 0.1);
    expect(last.validation!.mapAtR!).to.be.above(first.validation!.mapAtR! + 0.1);
    expect(last.validation!.queryCount).to.equal(300);
    expect(last.validFraction).to.be.within(0.9, 1);
    expect(result.backend).to.equal('cpu');
    for (const f of ['config.json', 'report.json', 'log.jsonl', 'checkpoints/last/model.json', 'scatter/epoch-003.svg', 'scatter/epoch-003.json', 'scatter/epoch-000-histogram.svg']) {
      expect(existsSync(path.join(out, f)), f).to.equal(true);
    }
    const config = JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')) as { loss: Record<string, unknown>; sampler: { kind: string } };
    expect(config.loss['name']).to.equal('ephn');
    expect(config.loss).to.have.property('temperature');
    expect(config.sampler.kind).to.equal('filled');
    const scatter = JSON.parse(readFileSync(path.join(out, 'scatter/epoch-003.json'), 'utf8')) as { points: unknown[]; correctFraction: number };
    expect(scatter.points).to.have.length(200);
    expect(stepLosses(out).every((l) => l !== null && Number.isFinite(l))).to.equal(true);
  });

  it('gives identical loss curves for the same seed, and resuming equals an uninterrupted run', async () => {
    const a = path.join(dir, 'a');
    const b = path.join(dir, 'b');
    const c = path.join(dir, 'c');
    await train(parseTrainConfig(tinyConfig(a, { epochs: 2 }), 'test'));
    await train(parseTrainConfig(tinyConfig(b, { epochs: 2 }), 'test'));
    expect(stepLosses(b)).to.deep.equal(stepLosses(a));
    await train(parseTrainConfig(tinyConfig(c, { epochs: 1 }), 'test'));
    const resumed = await train(parseTrainConfig(tinyConfig(c, { epochs: 2 }), 'test'), { resume: true });
    expect(resumed.history.map((r) => r.epoch)).to.deep.equal([0, 1, 2]);
    expect(stepLosses(c)).to.deep.equal(stepLosses(a));
    const other = path.join(dir, 'd');
    await train(parseTrainConfig(tinyConfig(other, { epochs: 2, seed: 1 }), 'test'));
    expect(stepLosses(other)).not.to.deep.equal(stepLosses(a));
  });

  it('restores the loss parameters (the margin loss\'s learnable beta) on resume', async () => {
    const margin = (out: string, epochs: number): TrainConfigInput => tinyConfig(out, { loss: { name: 'margin', learnBeta: true, beta: 0.8 }, optimizer: { kind: 'sgd', learningRate: 0.05 }, epochs });
    await train(parseTrainConfig(margin(path.join(dir, 'whole'), 2), 'test'));
    await train(parseTrainConfig(margin(path.join(dir, 'split'), 1), 'test'));
    await train(parseTrainConfig(margin(path.join(dir, 'split'), 2), 'test'), { resume: true });
    expect(stepLosses(path.join(dir, 'split'))).to.deep.equal(stepLosses(path.join(dir, 'whole')));
  });

  it('stops on divergence with one clear message and keeps the last good checkpoint', async () => {
    const out = path.join(dir, 'nan');
    const config = parseTrainConfig(tinyConfig(out, { optimizer: { kind: 'sgd', learningRate: 1e38 } }), 'test');
    await expectDmlError(train(config), 'E_NUMERIC', /Training diverged at epoch 1.*last good checkpoint \(epoch 0\)/);
    expect(existsSync(path.join(out, 'checkpoints/last/model.json'))).to.equal(true);
  });

  describe('bad configs fail before training, writing nothing', () => {
    const fails = async (mutate: (c: TrainConfigInput) => TrainConfigInput, code: Parameters<typeof expectDmlError>[1], pattern: RegExp): Promise<void> => {
      const out = path.join(dir, 'bad');
      await expectDmlError(async () => train(parseTrainConfig(mutate(tinyConfig(out)), 'train.json')), code, pattern);
      expect(existsSync(out)).to.equal(false);
    };

    it('an unknown loss', async () => {
      await fails((c) => ({ ...c, loss: { name: 'arcface' } }), 'E_ARG', /^Expected one of ep, ephn, .* for loss\.name but received "arcface"$/);
    });
    it('embedding dim 0', async () => {
      await fails((c) => ({ ...c, model: { kind: 'mlp', inputDim: 784, hidden: [], embeddingDim: 0 } }), 'E_ARG', /^train\.json: model\.embeddingDim: /);
    });
    it('n larger than a class allows without replacement', async () => {
      await fails((c) => ({ ...c, sampler: { kind: 'exact', groupSize: 70, batchSize: 140, replacement: false } }), 'E_ARG', /class/);
    });
    it('missing data', async () => {
      await fails((c) => ({ ...c, data: { ...c.data, dataset: `folder:${path.join(dir, 'nowhere')}` } }), 'E_NOT_FOUND', /nowhere/);
    });
    it('an image size that does not match the model', async () => {
      await fails((c) => ({ ...c, model: { kind: 'mlp', inputDim: 100, hidden: [], embeddingDim: 4 } }), 'E_ARG', /model\.inputDim: expected 784/);
    });
    it('an unknown field', async () => {
      await fails((c) => ({ ...c, epochz: 3 }) as TrainConfigInput, 'E_ARG', /epochz/);
    });
  });

  describe('recipe (c): a head on backbone features (models/default.onnx, PCA-64, as the backbone)', () => {
    const featureConfig = (out: string, features: Record<string, unknown>): TrainConfigInput =>
      tinyConfig(out, {
        data: { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', features: { backbone: 'models/default.onnx', cacheDir: path.join(dir, 'cache'), ...features } },
        model: { kind: 'mlp', inputDim: 64, hidden: [], embeddingDim: 16 },
        epochs: 2,
      });

    // On PCA features the untrained head already finds most nearest neighbours (Recall@1 ~ 0.88 on
    // these 300 held-out images); training makes the classes more compact, which MAP@R measures.
    it('trains, raises held-out MAP@R, caches the features and records the backbone preprocessing', async () => {
      const out = path.join(dir, 'features');
      const result = await train(parseTrainConfig(featureConfig(out, {}), 'test'));
      const first = result.history[0]!;
      const last = result.history[result.history.length - 1]!;
      expect(last.validation!.mapAtR!).to.be.above(first.validation!.mapAtR! + 0.02);
      expect(result.preprocessing).to.include({ height: 28, width: 28, channels: 1 });
      expect(readdirSync(path.join(dir, 'cache')).filter((f) => f.endsWith('.npy'))).to.have.length(2); // training + validation
    });

    it('draws augmented views per row, deterministically for a seed', async () => {
      const config = (out: string): TrainConfigInput => featureConfig(out, { augmentedViews: 2 });
      await train(parseTrainConfig(config(path.join(dir, 'v1')), 'test'));
      await train(parseTrainConfig(config(path.join(dir, 'v2')), 'test'));
      expect(stepLosses(path.join(dir, 'v2'))).to.deep.equal(stepLosses(path.join(dir, 'v1')));
      await train(parseTrainConfig(featureConfig(path.join(dir, 'plain'), {}), 'test'));
      expect(stepLosses(path.join(dir, 'plain'))).not.to.deep.equal(stepLosses(path.join(dir, 'v1')));
      expect(readdirSync(path.join(dir, 'cache')).filter((f) => f.endsWith('.npy'))).to.have.length(4); // + 2 augmented views
    });

    it('refuses a head whose inputDim is not the backbone dimension, before training', async () => {
      const out = path.join(dir, 'bad-dim');
      const config = { ...featureConfig(out, {}), model: { kind: 'mlp' as const, inputDim: 784, embeddingDim: 4 } };
      await expectDmlError(train(parseTrainConfig(config, 'test')), 'E_ARG', /^model\.inputDim: expected 64, the embedding dimension of the backbone models\/default\.onnx, but received 784$/);
      expect(existsSync(out)).to.equal(false);
    });

    it('refuses a model that is not a head', async () => {
      const config = { ...featureConfig(path.join(dir, 'cnn'), {}), model: { kind: 'cnn' as const, inputShape: [28, 28, 1] as [number, number, number], embeddingDim: 4 } };
      await expectDmlError(train(parseTrainConfig(config, 'test')), 'E_ARG', /needs model kind "mlp", but received "cnn"/);
    });
  });

  it('augments preloaded images (data.augmentation) deterministically for a seed', async () => {
    const config = (out: string): TrainConfigInput =>
      tinyConfig(out, { data: { ...tinyConfig(out).data, augmentation: { scale: [0.5, 1] } }, epochs: 1 });
    await train(parseTrainConfig(config(path.join(dir, 'a1')), 'test'));
    await train(parseTrainConfig(config(path.join(dir, 'a2')), 'test'));
    await train(parseTrainConfig(tinyConfig(path.join(dir, 'plain'), { epochs: 1 }), 'test'));
    expect(stepLosses(path.join(dir, 'a2'))).to.deep.equal(stepLosses(path.join(dir, 'a1')));
    expect(stepLosses(path.join(dir, 'plain'))).not.to.deep.equal(stepLosses(path.join(dir, 'a1')));
  });

  it('keeps no temporary files in the output', async () => {
    const out = path.join(dir, 'clean');
    await train(parseTrainConfig(tinyConfig(out, { epochs: 1 }), 'test'));
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).to.deep.equal([]);
  });
});
