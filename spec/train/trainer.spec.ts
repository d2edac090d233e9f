import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { applyClassSplit, parseClassList } from '../../lib/data/class-split.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import { loadCheckpoint } from '../../lib/train/checkpoint-io.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import type { TripletScatter } from '../../lib/train/scatter.js';
import { train } from '../../lib/train/trainer.js';
import { preloadImages } from '../../lib/train/training-data.js';
import { expectValidTrainReport } from '../helpers/report-schema.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import type { LossSpec } from '../../lib/train/losses/registry.js';

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
    const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as { history: unknown[] };
    expectValidTrainReport(report);
    expect(report.history).to.deep.equal(JSON.parse(JSON.stringify(result.history)));
    const scatter = JSON.parse(readFileSync(path.join(out, 'scatter/epoch-003.json'), 'utf8')) as TripletScatter;
    expect(scatter.points).to.have.length(200);
    expect(scatter).not.to.have.property('loop');
    expect(stepLosses(out).every((l) => l !== null && Number.isFinite(l))).to.equal(true);
    // validation.clusterCounts defaults to ['1x']: the curve is NMI alone, and no NMI+.
    expect(last.validation!.nmiCurve).to.deep.equal([{ clusters: 5, nmi: last.validation!.nmi }]);
    expect(last.validation!.nmiPlus).to.equal(null);
  });

  it('records the NMI curve and NMI+ over validation.clusterCounts as the evaluator computes them', async () => {
    const out = path.join(dir, 'curve');
    const result = await train(parseTrainConfig(tinyConfig(out, { epochs: 1, validation: { clusterCounts: ['2x', '10x', '1x'] } }), 'test'));
    expectValidTrainReport(JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')));
    const recorded = result.history[1]!.validation!;
    // The same held-out items (all 300 of the five held-out classes), embedded by the saved model.
    const manifest = applyClassSplit(await openDataset('folder:data/default'), parseClassList('bag,coat,dress,pullover,sandal'));
    const data = await preloadImages(
      manifest.items.filter((it) => it.split !== 'train'),
      result.preprocessing,
      'validation set',
    );
    const { model } = await loadCheckpoint(path.join(out, 'checkpoints/last'));
    const vectors = tf.tidy(() => (model.predict(tf.tensor2d(data.inputs, [data.count, 784])) as tf.Tensor).dataSync() as Float32Array);
    model.dispose();
    const { metrics } = await evaluateEmbeddings(
      { vectors, count: data.count, dim: 4, ids: data.ids, labels: Array.from(data.labels, (c) => data.labelNames[c]!) },
      null,
      { ks: [1, 2, 4, 8], clusterCounts: ['2x', '10x', '1x'], clusterSet: 'union', index: { kind: 'exact', chunkSize: 512 }, kmeans: { seed: 0 } },
    );
    expect(recorded.nmiCurve.map((p) => p.clusters)).to.deep.equal([5, 10, 50]);
    expect(metrics.nmiCurve.map((p) => p.clusters)).to.deep.equal([5, 10, 50]);
    recorded.nmiCurve.forEach((p, i) => expect(p.nmi).to.be.closeTo(metrics.nmiCurve[i]!.nmi, 1e-9));
    expect(recorded.nmiPlus).to.be.closeTo(metrics.nmiCurve[2]!.nmi, 1e-9);
    expect(recorded.nmi).to.equal(recorded.nmiCurve[0]!.nmi);
    expect(recorded.recall['1']).to.be.closeTo(metrics.recall['1']!, 1e-12);
    expect(new Set(recorded.nmiCurve.map((p) => p.nmi)).size, 'distinct points').to.equal(3);
  });

  it('trains on coarse labels (data.trainLabelGroups) and validates on the fine ones, same classes (the dataset\'s split)', async () => {
    // data/default as a manifest with the dataset's own split: 40 images of each of the ten classes
    // train, the other 20 are held out (all ten classes), as the Fashion-MNIST training and test files.
    const root = path.resolve('data/default');
    const lines = ['path,label,split'];
    for (const label of readdirSync(root).sort()) {
      readdirSync(path.join(root, label))
        .sort()
        .forEach((file, i) => lines.push(`${path.join(root, label, file)},${label},${i < 40 ? 'train' : 'test'}`));
    }
    writeFileSync(path.join(dir, 'manifest.csv'), `${lines.join('\n')}\n`);
    const groups = { tops: ['t-shirt_top', 'pullover', 'coat', 'shirt'], footwear: ['sandal', 'sneaker', 'ankle_boot'], other: ['trouser', 'dress', 'bag'] };
    const out = path.join(dir, 'coarse');
    const batchLabels = new Set<string>();
    let batches = 0;
    const result = await train(
      parseTrainConfig(tinyConfig(out, { data: { dataset: `csv:${path.join(dir, 'manifest.csv')}`, trainLabelGroups: groups, image: { height: 28, width: 28, channels: 1 } }, epochs: 1 }), 'test'),
      {
        onBatch: ({ labels }) => {
          batches++;
          for (const l of labels) batchLabels.add(l);
        },
      },
    );
    expect(batches).to.be.above(0);
    expect([...batchLabels].sort()).to.deep.equal(['footwear', 'other', 'tops']);
    const config = JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')) as { data: { trainLabelGroups: unknown }; sampler: { classes: number } };
    expect(config.data.trainLabelGroups).to.deep.equal({
      tops: ['coat', 'pullover', 'shirt', 't-shirt_top'],
      footwear: ['ankle_boot', 'sandal', 'sneaker'],
      other: ['bag', 'dress', 'trouser'],
    });
    expect(config.sampler.classes).to.equal(3);
    // Validation: the 200 held-out images with their ten fine labels (1x = 10 clusters, not 3).
    const validation = result.history[1]!.validation!;
    expect(validation.queryCount).to.equal(200);
    expect(validation.nmiCurve.map((p) => p.clusters)).to.deep.equal([10]);
  });

  it('adds the LoOp synthetic optimal negatives to the scatter diagram of a LoOp loss', async () => {
    const out = path.join(dir, 'loop');
    // All 300 held-out images (60 per class, so every item is paired) in the scatter.
    const config = tinyConfig(out, { loss: { name: 'loop-triplet' }, sampler: { kind: 'pairing', groupSize: 6, batchSize: 30 }, epochs: 1, scatter: { every: 1, set: 'validation', maxPoints: 300 } });
    const result = await train(parseTrainConfig(config, 'test'));
    const scatter = JSON.parse(readFileSync(path.join(out, 'scatter/epoch-001.json'), 'utf8')) as TripletScatter;
    const loop = scatter.loop!;
    expect(loop).to.deep.include({ geometry: 'arc', pairs: 150 });
    expect(loop.points).to.have.length(300);
    for (const p of loop.points) {
      expect(p.x).to.equal(scatter.points[p.point]!.x);
      expect(p.y).to.be.at.least(scatter.points[p.point]!.y - 1e-9);
    }
    expect(result.history[1]!.scatter!.loopCorrectFraction).to.equal(loop.correctFraction);
    const svg = readFileSync(path.join(out, 'scatter/epoch-001.svg'), 'utf8');
    expect(svg).to.include('LoOp optimal negative');
    expect(svg).to.include('#2ca02c');
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

  for (const backend of ['cpu', 'ort-cpu'] as const) {
    it(`resuming with weight decay equals an uninterrupted run on ${backend} (decay follows the resumed model's variables)`, async () => {
      const decayed = (out: string, epochs: number): TrainConfigInput => tinyConfig(out, { backend, optimizer: { kind: 'adam', learningRate: 0.01, weightDecay: 0.05 }, epochs });
      await train(parseTrainConfig(decayed(path.join(dir, 'whole'), 2), 'test'));
      await train(parseTrainConfig(decayed(path.join(dir, 'split'), 1), 'test'));
      await train(parseTrainConfig(decayed(path.join(dir, 'split'), 2), 'test'), { resume: true });
      expect(stepLosses(path.join(dir, 'split'))).to.deep.equal(stepLosses(path.join(dir, 'whole')));
      const undecayed = path.join(dir, 'undecayed');
      await train(parseTrainConfig(tinyConfig(undecayed, { backend, optimizer: { kind: 'adam', learningRate: 0.01 }, epochs: 2 }), 'test'));
      expect(stepLosses(undecayed).slice(-5)).not.to.deep.equal(stepLosses(path.join(dir, 'whole')).slice(-5));
    });
  }

  it("restores the EPS loss's random generator on resume, so the drawn negatives continue as uninterrupted", async () => {
    const eps = (out: string, epochs: number): TrainConfigInput => tinyConfig(out, { loss: { name: 'eps-triplet', seed: 3 }, epochs });
    await train(parseTrainConfig(eps(path.join(dir, 'whole'), 2), 'test'));
    await train(parseTrainConfig(eps(path.join(dir, 'split'), 1), 'test'));
    await train(parseTrainConfig(eps(path.join(dir, 'split'), 2), 'test'), { resume: true });
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
      await fails((c) => ({ ...c, loss: { name: 'sphereface' } as unknown as LossSpec }), 'E_ARG', /^train\.json: loss\.name: expected one of ep, ephn, .* but received "sphereface"$/);
    });
    it('embedding dim 0', async () => {
      await fails((c) => ({ ...c, model: { kind: 'mlp', inputDim: 784, hidden: [], embeddingDim: 0 } }), 'E_ARG', /^train\.json: model\.embeddingDim: /);
    });
    it('an embedding dim too large to allocate (one line, not "Invalid typed array length")', async () => {
      await fails(
        (c) => ({ ...c, model: { kind: 'mlp', inputDim: 784, hidden: [16], embeddingDim: 1e9 } }),
        'E_ARG',
        /^model: a layer's weights cannot be allocated \(Invalid typed array length: 16000000000\); lower model\.embeddingDim \(1000000000\) or the widths of its other layers$/,
      );
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
    it('a cnn whose input shape is not the images\' size (it used to train on scrambled pixels)', async () => {
      const cnn = (inputShape: [number, number, number]): TrainConfigInput['model'] => ({ kind: 'cnn', inputShape, embeddingDim: 4, filters: [4], hidden: [] });
      await fails(
        (c) => ({ ...c, model: cnn([32, 32, 3]) }),
        'E_ARG',
        /^data\.image\.height: expected 32, as the model's input \[batch, 32, 32, 3\] \(height, width, channels\) says, but received 28; make data\.image and the model's input shape agree$/,
      );
      await fails((c) => ({ ...c, model: cnn([28, 28, 3]) }), 'E_ARG', /^data\.image\.channels: expected 3, .* but received 1;/);
    });
    it('values that leave nothing to train (issue 38): a shift of the whole image, a scale below one pixel, a std or mean beyond float32, a GeM exponent of 1e-30', async () => {
      const augmented = (augmentation: Record<string, unknown>) => (c: TrainConfigInput): TrainConfigInput => ({ ...c, data: { ...c.data, augmentation: augmentation as never } });
      await fails(augmented({ translate: 28 }), 'E_ARG', /^Expected fewer pixels than the images' smaller side \(28; a shift of that many moves an image out of the frame\) for data\.augmentation\.translate but received 28$/);
      await fails(augmented({ rescale: [1e-9, 1e-9] }), 'E_ARG', /^Expected a minimum of at least 1\/28 .* for data\.augmentation\.rescale but received "\[1e-9, 1e-9\]"$/);
      const image = (fields: Record<string, unknown>) => (c: TrainConfigInput): TrainConfigInput => ({ ...c, data: { ...c.data, image: { height: 28, width: 28, channels: 1, ...fields } } });
      await fails(image({ mean: [0], std: [1e308] }), 'E_ARG', /^Expected a positive number of float32 range, in \[1\.2e-38, 3\.4e38\] for data\.image\.std\[0\] but received 1e\+308$/);
      await fails(image({ mean: [1e308], std: [1] }), 'E_ARG', /^Expected a finite number of float32 range .* for data\.image\.mean\[0\] but received 1e\+308$/);
      await fails(
        (c) => ({ ...c, backend: 'onnx', model: { kind: 'onnx', path: 'models/default.onnx', head: { pooling: 'gem', gemP: 1e-30, embeddingDim: 4 } } }) as TrainConfigInput,
        'E_ARG',
        /^train\.json: model\.head\.gemP: Too small: expected number to be >=0\.1$/,
      );
    });
    it('an unknown field', async () => {
      await fails((c) => ({ ...c, epochz: 3 }) as TrainConfigInput, 'E_ARG', /epochz/);
    });
    it('a malformed validation.clusterCounts spec', async () => {
      await fails((c) => ({ ...c, validation: { clusterCounts: ['1x', '10y'] } }), 'E_ARG', /^train\.json: validation\.clusterCounts: Expected positive integers or multiples of the label count such as 10x for validation\.clusterCounts but received "10y"$/);
    });

    describe('data.trainLabelGroups (training classes: bag, coat, dress, pullover, sandal)', () => {
      const grouped = (trainLabelGroups: Record<string, Array<string | number>>) => (c: TrainConfigInput): TrainConfigInput => ({ ...c, data: { ...c.data, trainLabelGroups } });
      it('a class in two groups', async () => {
        await fails(grouped({ a: ['bag', 'coat'], b: ['coat', 'dress', 'pullover', 'sandal'] }), 'E_ARG', /^Expected each training class in exactly one group for data\.trainLabelGroups but received "coat" in both "a" and "b"$/);
      });
      it('an unknown class', async () => {
        await fails(grouped({ a: ['bag', 'coat', 'jacket'], b: ['dress', 'pullover', 'sandal'] }), 'E_ARG', /^Expected labels of the dataset .* for data\.trainLabelGroups\.a but received "jacket"$/);
      });
      it('a held-out class', async () => {
        await fails(grouped({ a: ['bag', 'coat', 'sneaker'], b: ['dress', 'pullover', 'sandal'] }), 'E_ARG', /^Expected training classes .* for data\.trainLabelGroups\.a but received "sneaker", a held-out class/);
      });
      it('a training class in no group', async () => {
        await fails(grouped({ a: ['bag', 'coat'], b: ['dress', 'pullover'] }), 'E_ARG', /^Expected every training class in a group for data\.trainLabelGroups but received no group for "sandal"$/);
      });
      it('a single group', async () => {
        await fails(grouped({ all: ['bag', 'coat', 'dress', 'pullover', 'sandal'] }), 'E_ARG', /^Expected at least 2 groups .* for data\.trainLabelGroups but received 1$/);
      });
      it('an empty group', async () => {
        await fails(grouped({ a: [], b: ['bag', 'coat', 'dress', 'pullover', 'sandal'] }), 'E_ARG', /^train\.json: data\.trainLabelGroups\.a: /);
      });
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
      expectValidTrainReport(JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')));
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

  it('rescales (zooming out) and translates preloaded images with a fill, deterministically for a seed', async () => {
    const affine = { scale: [1, 1], ratio: [1, 1], flipProbability: 0, rescale: [0.7, 1], translate: 3, fill: 'white' };
    const config = (out: string, augmentation: Record<string, unknown>): TrainConfigInput =>
      tinyConfig(out, { data: { ...tinyConfig(out).data, augmentation: augmentation as never }, epochs: 1 });
    await train(parseTrainConfig(config(path.join(dir, 'r1'), affine), 'test'));
    await train(parseTrainConfig(config(path.join(dir, 'r2'), affine), 'test'));
    await train(parseTrainConfig(config(path.join(dir, 'still'), { scale: [1, 1], ratio: [1, 1], flipProbability: 0 }), 'test'));
    expect(stepLosses(path.join(dir, 'r2'))).to.deep.equal(stepLosses(path.join(dir, 'r1')));
    expect(stepLosses(path.join(dir, 'still'))).not.to.deep.equal(stepLosses(path.join(dir, 'r1')));
  });

  it('warns, also in report.json, when a validation period trained nothing (no batch had a valid tuple)', async () => {
    // Contrastive margins no pair violates (distances of unit vectors lie in [0, 2]): every batch is invalid.
    const out = path.join(dir, 'nothing');
    const result = await train(parseTrainConfig(tinyConfig(out, { epochs: 2, loss: { name: 'contrastive', posMargin: 2, negMargin: 0 } as LossSpec }), 'test'));
    const warning = (epoch: number): string =>
      `epoch ${epoch} trained nothing: none of its 10 batches had a valid tuple for the contrastive loss (valid fraction 0); check the settings that make the images or embeddings alike (data.augmentation, data.image, the sampler, the model's pooling)`;
    expect(result.warnings).to.deep.equal([warning(1), warning(2)]);
    expect((JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as { warnings: string[] }).warnings).to.deep.equal([warning(1), warning(2)]);
    expect(result.history.map((r) => r.updates)).to.deep.equal([0, 0, 0]);
  });

  it('an embedding that overflows at the untrained validation names the settings that scale it, and leaves no run behind', async () => {
    // GeM with p = 50 (allowed) over ReLU features of inputs up to 1000: x^50 overflows float32.
    const out = path.join(dir, 'overflow');
    const model = { kind: 'onnx', path: 'spec/fixtures/graph-trainer/resnet-triplet/initial.onnx', preprocessorConfig: false, output: '/block2/relu_1/Relu_output_0', head: { pooling: 'gem', gemP: 50, embeddingDim: 8 } };
    const image = { height: 16, width: 16, channels: 3, resizeShorter: 16, mean: [0, 0, 0], std: [0.001, 0.001, 0.001] };
    const config = tinyConfig(out, { backend: 'onnx', device: 'cpu', model, data: { ...tinyConfig(out).data, image }, epochs: 1 } as Partial<TrainConfigInput>);
    await expectDmlError(
      train(parseTrainConfig(config, 'test')),
      'E_NUMERIC',
      "The untrained model's embedding of held-out image ankle_boot/t10k-00000.png holds NaN at epoch 0: a value overflows float32 in the network; check the settings that scale it (model.head.gemP 50, data.image mean [0,0,0], std [0.001,0.001,0.001] and rescale 1/255)",
    );
    expect(existsSync(out)).to.equal(false);
  });

  it('keeps no temporary files in the output', async () => {
    const out = path.join(dir, 'clean');
    await train(parseTrainConfig(tinyConfig(out, { epochs: 1 }), 'test'));
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).to.deep.equal([]);
  });
});
