/**
 * @file Hub-format ONNX embedders out of the box: the stand-ins of spec/fixtures/hub (made by
 * scripts/reference/make_hub_fixtures.py with the interfaces optimum and transformers.js export, and
 * reference embeddings computed with the Hugging Face processors' algorithm in Pillow) are embedded
 * with no flag at all and match the references: median cosine >= 0.9999 and min >= 0.999 (float16:
 * min >= 0.999 too). Then `dml eval`, `dml index build` and serving from the index folder on the
 * external-data model.
 */
import { escapeMarkdownMarkup } from '../../lib/report/markdown.js';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { openDataset } from '../../lib/data/open-dataset.js';
import { OnnxEmbedder, type EmbedderOptions } from '../../lib/embed/embedder.js';
import type { SingleRunReport } from '../../lib/report/report.js';
import { createSearchApp } from '../../lib/serve/app.js';
import { evaluate } from '../../lib/facade.js';
import { beforeSummary, runCliCaptured } from '../helpers/run-cli.js';
import { expectValidReport } from '../helpers/report-schema.js';
import { makeTempDir } from '../image/image-fixtures.js';

const HUB = path.resolve('spec/fixtures/hub');
const IMAGES = path.join(HUB, 'images');

interface ModelReference {
  outputs: string[];
  embeddings: Record<string, number[]>;
  cls: Record<string, number[]>;
  mean: Record<string, number[]>;
}
const reference = JSON.parse(readFileSync(path.join(HUB, 'reference.json'), 'utf8')) as { models: Record<string, ModelReference> };

/** Cosines of the embeddings of every fixture image with `model` against `expected`, by image id. */
async function cosines(model: string, expected: Record<string, number[]>, options: EmbedderOptions = {}): Promise<{ values: number[]; embedder: OnnxEmbedder }> {
  const manifest = await openDataset(`folder:${IMAGES}`);
  const embedder = await OnnxEmbedder.open(model, { device: 'cpu', ...options });
  try {
    const { set } = await embedder.embedItems(manifest.items, { workers: 0 });
    const values = set.ids.map((id, row) => {
      const want = expected[id] as number[];
      expect(want, id).to.be.an('array');
      let dot = 0;
      for (let j = 0; j < set.dim; j++) dot += (set.vectors[row * set.dim + j] as number) * (want[j] as number);
      return dot;
    });
    expect(values).to.have.length(Object.keys(expected).length);
    return { values, embedder };
  } finally {
    await embedder.release();
  }
}

function expectClose(values: number[], median = 0.9999, min = 0.999): void {
  const sorted = [...values].sort((a, b) => a - b);
  expect(sorted[Math.floor(sorted.length / 2)], `median cosine of ${sorted.join(', ')}`).to.be.at.least(median);
  expect(sorted[0], `min cosine of ${sorted.join(', ')}`).to.be.at.least(min);
}

describe('Hub-format models (spec/fixtures/hub)', function () {
  this.timeout(60_000);

  for (const name of ['vit', 'dinov2', 'clip', 'siglip', 'convnext']) {
    it(`${name}: out of the box, matching the reference embeddings`, async () => {
      const { values, embedder } = await cosines(path.join(HUB, name, 'onnx', 'model.onnx'), (reference.models[name] as ModelReference).embeddings);
      expectClose(values);
      expect(embedder.warnings).to.deep.equal([]);
      expect(embedder.signature.outputName).to.equal(name === 'clip' ? 'image_embeds' : 'pooler_output');
      expect(embedder.preprocessorConfigPath).to.equal(path.join(HUB, name, 'preprocessor_config.json'));
      expect(embedder.signature.preprocessingSources).to.deep.include({ mean: 'preprocessor config', resample: 'preprocessor config', height: 'preprocessor config', layout: 'model input' });
    });
  }

  it('vit model_fp16.onnx: float16 inputs and outputs cast, close to the float32 reference', async () => {
    const { values, embedder } = await cosines(path.join(HUB, 'vit', 'onnx', 'model_fp16.onnx'), (reference.models['vit'] as ModelReference).embeddings);
    expect(embedder.signature.inputType).to.equal('float16');
    expectClose(values, 0.999, 0.999);
  });

  it('vit last_hidden_state with --pooling cls and mean (patch tokens, class token excluded)', async () => {
    const model = path.join(HUB, 'vit', 'onnx', 'model.onnx');
    const ref = reference.models['vit'] as ModelReference;
    expectClose((await cosines(model, ref.cls, { pooling: 'cls' })).values);
    expectClose((await cosines(model, ref.mean, { pooling: 'mean' })).values);
  });

  it('the library facade takes pooling and records it', async () => {
    const report = await evaluate({ model: path.join(HUB, 'vit', 'onnx', 'model.onnx'), data: `folder:${IMAGES}`, pooling: 'cls', device: 'cpu', workers: 0, ks: [1], clusterCounts: ['1x'] });
    expect(report.model).to.deep.include({ outputName: 'last_hidden_state', pooling: 'cls', embeddingDim: 16 });
    expect(report.warnings).to.deep.equal([]);
  });

  it("without the config (as before), the pipeline's defaults miss the reference and say so", async () => {
    // The stand-in takes 32x32 only (a real CLIP would run at the default 224 and be as wrong).
    const options: EmbedderOptions = { preprocessorConfig: false, preprocessing: { height: 32, width: 32 } };
    const { values, embedder } = await cosines(path.join(HUB, 'clip', 'onnx', 'model.onnx'), (reference.models['clip'] as ModelReference).embeddings, options);
    expect(embedder.warnings).to.deep.equal([
      `${path.join(HUB, 'clip', 'onnx', 'model.onnx')} has no preprocessing metadata (dml.preprocessing) and no preprocessor_config.json; using dmlkit's defaults: shorter side resized to 37 before the centre crop, ImageNet mean [0.485, 0.456, 0.406] and std [0.229, 0.224, 0.225]; pass --preprocessor-config <file> or --size/--resize/--mean/--std if the model was trained otherwise`,
    ]);
    expect(Math.min(...values)).to.be.below(0.999);
  });

  it('dml index build --pooling cls records the pooling; serving from the index pools the same way', async () => {
    const dir = makeTempDir('dml-hub-pool-');
    try {
      const out = path.join(dir, 'index');
      const res = await runCliCaptured(['index', 'build', path.join(HUB, 'vit', 'onnx', 'model.onnx'), `folder:${IMAGES}`, '--out', out, '--pooling', 'cls', '--device', 'cpu', '--workers', '0', '--no-cache']);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr).to.equal('');
      const metadata = JSON.parse(readFileSync(path.join(out, 'index.json'), 'utf8')) as { model: Record<string, unknown>; preprocessing: Record<string, unknown> };
      expect(metadata.model).to.deep.include({ outputName: 'last_hidden_state', pooling: 'cls' });
      expect(metadata.preprocessing).to.deep.include({ resizeMode: 'exact', resample: 'bilinear', cropRounding: 'floor' });
      const app = await createSearchApp({ dir: out, device: 'cpu', maxUploadBytes: 1 << 20, maxK: 5, allowWrites: false });
      try {
        const found = await app.inject({ method: 'POST', url: '/search?k=1', headers: { 'content-type': 'image/png' }, payload: readFileSync(path.join(IMAGES, 'c', 'odd.png')) });
        expect(found.statusCode, found.body).to.equal(200);
        const body = JSON.parse(found.body) as { neighbours: Array<{ id: string; score: number }> };
        expect(body.neighbours[0]).to.deep.include({ id: 'c/odd.png' });
        expect(body.neighbours[0]?.score).to.be.closeTo(1, 1e-5);
      } finally {
        await app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('dml eval, dml index build and serving, on the external-data model', () => {
    let dir: string;
    before(() => {
      dir = makeTempDir('dml-hub-');
    });
    after(() => rmSync(dir, { recursive: true, force: true }));
    const model = path.join(HUB, 'dinov2', 'onnx', 'model.onnx');

    it('dml eval: runs with no flag, records the config, the sources and the external data; the embeddings match', async () => {
      const json = path.join(dir, 'report.json');
      const out = path.join(dir, 'out');
      const res = await runCliCaptured(['eval', model, '--data', `folder:${IMAGES}`, '--device', 'cpu', '--workers', '0', '--k', '1', '--cluster-counts', '1x', '--json', json, '--out', out, '--save-embeddings', path.join(dir, 'e.npy')]);
      expect(res.code, res.stderr).to.equal(0);
      expect(beforeSummary(res.stderr)).to.equal('');
      const report = JSON.parse(readFileSync(json, 'utf8')) as SingleRunReport;
      expectValidReport(report);
      const info = report.model as NonNullable<SingleRunReport['model']>;
      expect(info.preprocessorConfig).to.equal(path.join(HUB, 'dinov2', 'preprocessor_config.json'));
      expect(info.externalData?.map((f) => f.location)).to.deep.equal(['model.onnx_data']);
      expect(info.preprocessingSources).to.deep.include({ resizeShorter: 'preprocessor config', cropRounding: 'preprocessor config', layout: 'model input' });
      // report.md escapes markup characters (the brackets of the mean and std lists among them).
      expect(readFileSync(path.join(out, 'report.md'), 'utf8')).to.include(escapeMarkdownMarkup(
        `Preprocessing of model.onnx: resize shorter side to 36, bicubic (preprocessor config); centre crop 32x32 (offset floored) (preprocessor config); RGB NCHW (preprocessor config, model input); x 1/255, mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225] (preprocessor config); config ${path.join(HUB, 'dinov2', 'preprocessor_config.json')}.`,
      ));
    });

    it('dml index build copies the data file; the index folder serves alone', async () => {
      const out = path.join(dir, 'index');
      const res = await runCliCaptured(['index', 'build', model, `folder:${IMAGES}`, '--out', out, '--device', 'cpu', '--workers', '0', '--no-cache']);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr).to.equal('');
      // The model and its data file apart from the index's own files (lib/index-store/layout.ts).
      expect(readdirSync(out).sort()).to.deep.equal(['gen-1', 'index.json', 'model']);
      expect(readdirSync(path.join(out, 'model')).sort()).to.deep.equal(['model.onnx', 'model.onnx_data']);
      const app = await createSearchApp({ dir: out, device: 'cpu', maxUploadBytes: 1 << 20, maxK: 5, allowWrites: false });
      try {
        const res2 = await app.inject({ method: 'POST', url: '/search?k=1', headers: { 'content-type': 'image/png' }, payload: readFileSync(path.join(IMAGES, 'b', 'small.png')) });
        expect(res2.statusCode, res2.body).to.equal(200);
        const body = JSON.parse(res2.body) as { neighbours: Array<{ id: string; score: number }> };
        expect(body.neighbours[0]?.id).to.equal('b/small.png');
        expect(body.neighbours[0]?.score).to.be.closeTo(1, 1e-5);
      } finally {
        await app.close();
      }
    });
  });
});
