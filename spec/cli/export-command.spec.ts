/**
 * @file `dml export`: models trained by `train()` (a small CNN and a convnet on the embedded Fashion-MNIST images)
 * and a head on models/default.onnx features are exported from the CLI; onnxruntime embeds the data as
 * the in-memory tfjs model does, and `dml eval` on the exported file gives the Recall@K of those
 * embeddings (exactly the tfjs model's where no near-tie can flip). Usage errors exit 2,
 * runtime errors 1, each with one line on stderr.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { openDataset } from '../../lib/data/open-dataset.js';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import type { EmbeddingSet } from '../../lib/embed/embedding-set.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import type { SingleRunReport } from '../../lib/report/report.js';
import { loadCheckpoint, saveCheckpoint } from '../../lib/train/checkpoint-io.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import { train } from '../../lib/train/trainer.js';
import { preloadImages } from '../../lib/train/training-data.js';
import { beforeSummary, runCliCaptured } from '../helpers/run-cli.js';
import { onCpuBackend } from '../helpers/tf-backend.js';

const DATA = 'folder:data/default';
const KS = [1, 2, 4, 8];

/** Recall@K of `set` (query set = gallery set), as dml eval computes it. */
async function recallOf(set: EmbeddingSet): Promise<Record<string, number>> {
  const evaluation = await evaluateEmbeddings(set, null, {
    ks: KS,
    clusterCounts: ['1x'],
    clusterSet: 'union',
    index: { kind: 'exact', chunkSize: 512 },
    kmeans: { seed: 0 },
  });
  return evaluation.metrics.recall;
}

/** Runs `dml eval` on `model` over the default data and returns its Recall@K. */
async function evalRecall(model: string, json: string): Promise<Record<string, number>> {
  const res = await runCliCaptured(['eval', model, '--data', DATA, '--json', json, '--k', KS.join(','), '--cluster-counts', '1x', '--no-cache', '--device', 'cpu']);
  expect(beforeSummary(res.stderr)).to.equal('');
  expect(res.code).to.equal(0);
  return (JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport).metrics.recall;
}

describe('dml export', function () {
  this.timeout(120000);
  onCpuBackend();
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-export-cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * Each model is trained, exported by the CLI and embedded by onnxruntime over the whole evaluation
   * set. `exactRecall`: dml eval gives exactly the Recall@K of the in-memory tfjs model. That needs
   * every query's nearest neighbours to be separated by more than float rounding: true of the CNN
   * (smallest top-1/top-2 similarity gap 2.0e-6), not safely of the convnet (a gap of 6.6e-7, with
   * onnxruntime and tfjs embeddings 2.2e-7 apart; with other batch-norm settings 14 of 600 queries had
   * gaps below 1e-6 and one flipped), whose export is checked on the embeddings themselves.
   */
  const trainedModels: Array<{ what: string; model: TrainConfigInput['model']; exactRecall: boolean }> = [
    { what: 'a trained CNN', model: { kind: 'cnn', inputShape: [28, 28, 1], filters: [4], hidden: [16], embeddingDim: 8, batchNorm: true }, exactRecall: true },
    // Strided 'same' convolutions (asymmetric pads on 28 and 14, symmetric on 7), inference-mode batch
    // norm with the moving statistics training moved, global average pooling.
    { what: 'a trained convnet', model: { kind: 'convnet', inputShape: [28, 28, 1], widths: [4, 6, 8], depth: 2, hidden: [12], embeddingDim: 8 }, exactRecall: false },
  ];
  for (const { what, model: modelSpec, exactRecall } of trainedModels) {
    it(`exports ${what}; onnxruntime embeds the evaluation set as tfjs does${exactRecall ? '; dml eval on the file gives the Recall@K of the tfjs model' : ''}`, async () => {
      const out = path.join(dir, 'run');
      await train(
        parseTrainConfig(
          {
            data: { dataset: DATA, trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 28, width: 28, channels: 1, mean: [0.3], std: [0.35] }, maxTrainItems: 120 },
            model: modelSpec,
            loss: { name: 'ephn' },
            sampler: { kind: 'filled', groupSize: 6, batchSize: 30 },
            optimizer: { kind: 'adam', learningRate: 0.01 },
            epochs: 1,
            backend: 'cpu',
            validation: { maxItems: 50 },
            scatter: { every: 1, set: 'validation', maxPoints: 50 },
            out,
          },
          'test',
        ),
      );
      const file = path.join(dir, 'model.onnx');
      const res = await runCliCaptured(['export', out, '--out', file]);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr).to.match(/^exporting .*checkpoints[/\\]last\nparity over 8 inputs: max abs difference /);
      const summary = JSON.parse(res.stdout) as { input: { name: string; dims: unknown[] }; output: { embeddingDim: number }; parity: { maxAbsDiff: number; minCosine: number } };
      expect(summary.input).to.deep.equal({ name: 'image', dims: ['batch', 1, 28, 28] });
      expect(summary.output.embeddingDim).to.equal(8);
      expect(summary.parity.maxAbsDiff).to.be.below(1e-4);

      // The in-memory model on the same images, preprocessed as training did.
      const { model } = await loadCheckpoint(path.join(out, 'checkpoints', 'last'));
      // Training moved the batch-norm statistics away from their start (mean 0), so inference-mode
      // batch norm is exported with statistics that matter.
      for (const w of model.weights.filter((v) => v.originalName.endsWith('moving_mean'))) {
        expect(Math.max(...Array.from(w.read().dataSync(), Math.abs)), w.originalName).to.be.above(1e-3);
      }
      const items = (await openDataset(DATA)).items;
      const pre: Preprocessing = { height: 28, width: 28, channels: 1, resizeShorter: 28, layout: 'NHWC', mean: [0.3], std: [0.35] };
      const data = await preloadImages(items, pre, 'evaluation set');
      const vectors = tf.tidy(() => (model.predict(tf.tensor(data.inputs, [data.count, 28, 28, 1])) as tf.Tensor).dataSync() as Float32Array);
      model.dispose();
      const embedder = await OnnxEmbedder.open(file, { device: 'cpu' });
      const viaOrt = (await embedder.embedItems(items)).set;
      await embedder.release();
      expect(viaOrt.count).to.equal(data.count);
      expect(Math.max(...Array.from(viaOrt.vectors, (v, i) => Math.abs(v - (vectors[i] as number))))).to.be.below(1e-5);
      const fromFile = await evalRecall(file, path.join(dir, 'report.json'));
      expect(fromFile).to.deep.equal(await recallOf(viaOrt));
      if (exactRecall) expect(fromFile).to.deep.equal(await recallOf({ vectors, count: data.count, dim: 8, ids: data.ids, labels: items.map((it) => it.label) }));
    });
  }

  it("composes a head with the run config's backbone (or --backbone); dml eval matches backbone + tfjs head", async () => {
    const out = path.join(dir, 'head-run');
    const head = await buildModel({ kind: 'mlp', inputDim: 64, hidden: [32], embeddingDim: 16 }, 4);
    await saveCheckpoint(path.join(out, 'checkpoints', 'last'), { model: head });
    writeFileSync(path.join(out, 'config.json'), JSON.stringify({ data: { dataset: DATA, features: { backbone: 'models/default.onnx' } }, model: { kind: 'mlp', inputDim: 64 } }));
    const file = path.join(dir, 'composed.onnx');
    const res = await runCliCaptured(['export', path.join(out, 'checkpoints', 'last'), '--out', file]);
    expect(res.code, res.stderr).to.equal(0);
    const summary = JSON.parse(res.stdout) as { backbone: { path: string }; input: { dims: unknown[] } };
    expect(summary.backbone.path).to.equal('models/default.onnx');
    expect(summary.input.dims).to.deep.equal(['batch', 1, 28, 28]);

    const backbone = await OnnxEmbedder.open('models/default.onnx', { device: 'cpu' });
    const features = (await backbone.embedItems((await openDataset(DATA)).items)).set;
    await backbone.release();
    const vectors = tf.tidy(() => (head.predict(tf.tensor(features.vectors, [features.count, 64])) as tf.Tensor).dataSync() as Float32Array);
    const inMemory = await recallOf({ ...features, vectors, dim: 16 });
    expect(await evalRecall(file, path.join(dir, 'report.json'))).to.deep.equal(inMemory);

    const other = path.join(dir, 'other.onnx');
    const missing = await runCliCaptured(['export', out, '--out', other, '--backbone', path.join(dir, 'nope.onnx')]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/^exporting .*\ndml: Cannot read backbone .*nope\.onnx: no such file\n$/);
    expect(existsSync(other)).to.equal(false);
  });

  it('usage and runtime errors: one line, exit 2 or 1, nothing written', async () => {
    const file = path.join(dir, 'm.onnx');
    const bad = await runCliCaptured(['export', dir, '--out', file, '--layout', 'NCWH']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.equal('dml: Expected one of NCHW, NHWC for --layout but received "NCWH"\n');
    const none = await runCliCaptured(['export', path.join(dir, 'nothing'), '--out', file]);
    expect(none.code).to.equal(1);
    expect(none.stderr).to.match(/^dml: No checkpoint at .*nothing: expected a training run folder \(with checkpoints\/last\) or a checkpoint folder \(with checkpoint\.json\)\n$/);
    expect(existsSync(file)).to.equal(false);
  });
});
