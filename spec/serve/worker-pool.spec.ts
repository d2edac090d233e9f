import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { HttpError } from '../../lib/serve/http-errors.js';
import { InferenceWorkerPool, type WorkerPoolOptions } from '../../lib/serve/worker-pool.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { encodeBombPng } from '../image/image-fixtures.js';
import { MODEL } from './fixtures.js';

const IMAGES = ['bag/t10k-00018.png', 'coat/t10k-00006.png', 'dress/t10k-00013.png', 'sandal/t10k-00008.png'].map((f) => path.join('data/default', f));

describe('serve/InferenceWorkerPool', function () {
  this.timeout(60_000);
  let embedder: OnnxEmbedder;
  let options: WorkerPoolOptions;
  /** In-process embeddings of IMAGES, the reference. */
  let expected: Float32Array[];

  before(async () => {
    embedder = await OnnxEmbedder.open(MODEL, { device: 'cpu' });
    const items = IMAGES.map((file) => ({ id: file, source: { kind: 'file' as const, path: file }, label: '', split: '', isQuery: true, isGallery: true }));
    const { set } = await embedder.embedItems(items);
    expected = IMAGES.map((_, i) => set.vectors.slice(i * set.dim, (i + 1) * set.dim));
    options = { modelPath: MODEL, modelSha256: embedder.modelSha256, preprocessing: embedder.preprocessing, outputName: 'embedding', device: 'cpu' };
  });
  after(() => embedder.release());

  it('embeds images off the main thread exactly as the in-process embedder does, batching concurrent requests', async () => {
    const pool = await InferenceWorkerPool.start({ ...options, workers: 2, batchSize: 4 });
    try {
      expect(pool.size).to.equal(2);
      const bytes = IMAGES.map((file) => readFileSync(file));
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => pool.embed(bytes[i % 4] as Buffer, `image ${i}`)));
      results.forEach((vector, i) => expect(Array.from(vector), `request ${i}`).to.deep.equal(Array.from(expected[i % 4] as Float32Array)));
      expect(pool.pending).to.equal(0);
    } finally {
      await pool.close();
    }
  });

  it('answers a bad image with its E_IMAGE error and keeps serving', async () => {
    const pool = await InferenceWorkerPool.start(options);
    try {
      await expectDmlError(pool.embed(Buffer.from('not an image'), 'request body'), 'E_IMAGE', /^request body: not an image in a supported format/);
      await expectDmlError(pool.embed(encodeBombPng(20_000, 20_000), 'file "bomb.png"'), 'E_IMAGE', /^file "bomb\.png": too many pixels, 20000x20000 = 400000000 \(expected at most limitInputPixels = 40000000 pixels\)$/);
      await expectDmlError(pool.embed(readFileSync(IMAGES[0] as string).subarray(0, 200), 'cut.png'), 'E_IMAGE', 'cut.png: corrupt image data, vipspng: libpng read error (expected a decodable image file)');
      expect(Array.from(await pool.embed(readFileSync(IMAGES[1] as string), 'ok'))).to.deep.equal(Array.from(expected[1] as Float32Array));
    } finally {
      await pool.close();
    }
  });

  it('refuses requests beyond maxPending with 503, and after close', async () => {
    const pool = await InferenceWorkerPool.start({ ...options, maxPending: 1 });
    const bytes = readFileSync(IMAGES[0] as string);
    const first = pool.embed(bytes, 'first');
    const busy = await expectDmlError(pool.embed(bytes, 'second'), 'E_CANCELLED', 'Server busy: 1 images are being embedded (at most 1); retry later');
    expect(busy).to.be.instanceOf(HttpError);
    expect((busy as HttpError).statusCode).to.equal(503);
    const closing = pool.close();
    await expectDmlError(pool.embed(bytes, 'late'), 'E_CANCELLED', 'The server is shutting down');
    // close() lets the request in flight finish.
    expect(Array.from(await first)).to.deep.equal(Array.from(expected[0] as Float32Array));
    await closing;
    expect(pool.size).to.equal(0);
  });

  it('fails to start with the worker\'s error when the model is not the one the index was built with', async () => {
    await expectDmlError(
      InferenceWorkerPool.start({ ...options, modelSha256: '0'.repeat(64) }),
      'E_MODEL',
      new RegExp(`default\\.onnx has sha256 ${embedder.modelSha256}; the index was built with 0{64}$`),
    );
    await expectDmlError(InferenceWorkerPool.start({ ...options, modelPath: '/nonexistent.onnx' }), 'E_NOT_FOUND', 'Cannot read model /nonexistent.onnx: no such file');
  });
});
