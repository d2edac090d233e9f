import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { ManifestItem } from '../../lib/data/manifest.js';
import { DmlError } from '../../lib/errors.js';
import { embedItemsCached } from '../../lib/embed/cache.js';
import { DECODE_POOL_MIN_ITEMS, decodeProcessCount, OnnxEmbedder, type EmbedderOptions } from '../../lib/embed/embedder.js';
import { defaultDecodeWorkers } from '../../lib/image/decode-pool.js';
import { encodeModel, floatTensor, int64Tensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { loadImageBatch } from '../../lib/image/batch-loader.js';
import { Rng } from '../../lib/util/rng.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

const FIXTURES = path.resolve('spec/fixtures/torch');
interface Reference {
  models: Record<string, { embeddings: Record<string, number[]> }>;
}
const reference = (await import('../fixtures/torch/reference.json', { with: { type: 'json' } })).default as unknown as Reference;
const imageNames = readdirSync(path.join(FIXTURES, 'images')).filter((f) => f.endsWith('.png')).sort();
const items: ManifestItem[] = imageNames.map((name) => ({
  id: name,
  source: { kind: 'file', path: path.join(FIXTURES, 'images', name) },
  label: name.split('.')[0] as string,
  split: 'test',
  isQuery: true,
  isGallery: true,
}));

function maxAbsDiff(set: { vectors: Float32Array; dim: number; ids: string[] }, expected: Record<string, number[]>): number {
  let worst = 0;
  set.ids.forEach((id, row) => {
    const ref = expected[id] as number[];
    expect(ref, id).to.have.length(set.dim);
    ref.forEach((v, j) => {
      worst = Math.max(worst, Math.abs(v - (set.vectors[row * set.dim + j] as number)));
    });
  });
  return worst;
}

describe('OnnxEmbedder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-embedder-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('matches PyTorch on a third-party NCHW model with a dynamic batch (within 1e-4), across batch boundaries', async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), {
      device: 'cpu',
      batchSize: 3,
      preprocessing: { resizeShorter: 32 },
    });
    try {
      expect(embedder.signature).to.deep.include({ inputName: 'images', outputName: 'embedding', fixedBatch: null, outputDim: 16 });
      expect(embedder.preprocessing).to.deep.include({ layout: 'NCHW', channels: 3, height: 32, width: 32 });
      expect(embedder.provider).to.equal('cpu');
      const { set, failures } = await embedder.embedItems(items);
      expect(failures).to.deep.equal([]);
      expect(set.ids).to.deep.equal(imageNames);
      expect(maxAbsDiff(set, reference.models['nchw_dynamic.onnx']!.embeddings)).to.be.below(1e-4);
    } finally {
      await embedder.release();
    }
  });

  it('matches PyTorch on an NHWC model with a fixed batch of 2, taking preprocessing from metadata_props', async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nhwc_fixed.onnx'), { device: 'cpu' });
    try {
      expect(embedder.signature.fixedBatch).to.equal(2);
      expect(embedder.batchSize).to.equal(2);
      expect(embedder.preprocessing).to.deep.equal({
        height: 32,
        width: 32,
        resizeShorter: 32,
        channels: 3,
        layout: 'NHWC',
        mean: [0.5, 0.4, 0.3],
        std: [0.25, 0.2, 0.3],
      });
      expect(embedder.signature.preprocessingSources.mean).to.equal('metadata');
      // 7 images: the last batch is padded to 2 and the padding dropped.
      const { set } = await embedder.embedItems(items);
      expect(set.count).to.equal(7);
      expect(maxAbsDiff(set, reference.models['nhwc_fixed.onnx']!.embeddings)).to.be.below(1e-4);
    } finally {
      await embedder.release();
    }
  });

  it('gives the same vectors, ids, progress and failures with 2 decode processes as decoding in process', async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', batchSize: 3, preprocessing: { resizeShorter: 32 } });
    try {
      const broken = path.join(dir, 'broken.png');
      writeFileSync(broken, 'not a png');
      const withBad: ManifestItem[] = [...items.slice(0, 4), { ...items[0]!, id: 'broken', source: { kind: 'file', path: broken } }, ...items.slice(4)];
      const run = async (workers: number) => {
        const progress: number[] = [];
        const result = await embedder.embedItems(withBad, { workers, skipBadImages: true, onProgress: (done) => progress.push(done) });
        return { ...result, progress };
      };
      const local = await run(0);
      const pooled = await run(2);
      expect(local.set.ids).to.deep.equal(imageNames);
      expect(pooled.set.ids).to.deep.equal(local.set.ids);
      expect(Buffer.from(pooled.set.vectors.buffer).equals(Buffer.from(local.set.vectors.buffer))).to.equal(true);
      expect(pooled.failures).to.deep.equal(local.failures);
      expect(pooled.failures.map((f) => f.id)).to.deep.equal(['broken']);
      expect(pooled.progress).to.deep.equal([3, 6, 8]);
      expect(local.progress).to.deep.equal([3, 6, 8]);
      await expectDmlError(embedder.embedItems(items, { workers: -1 }), 'E_ARG', 'Expected a non-negative integer for workers but received -1');
    } finally {
      await embedder.release();
    }
  });

  it("normalization 'device' (uint8 crops, the normalisation graph in front of the model) embeds bit for bit as 'host', in process and with decode processes", async () => {
    const broken = path.join(dir, 'broken.png');
    writeFileSync(broken, 'not a png');
    const withBad: ManifestItem[] = [...items.slice(0, 4), { ...items[0]!, id: 'broken', source: { kind: 'file', path: broken } }, ...items.slice(4)];
    // NCHW with a dynamic batch of 3; NHWC with a fixed batch of 2 (the last batch padded).
    const models: Array<[string, EmbedderOptions]> = [
      ['nchw_dynamic.onnx', { batchSize: 3, preprocessing: { resizeShorter: 32 } }],
      ['nhwc_fixed.onnx', {}],
    ];
    for (const [file, options] of models) {
      const host = await OnnxEmbedder.open(path.join(FIXTURES, file), { device: 'cpu', normalization: 'host', ...options });
      const onDevice = await OnnxEmbedder.open(path.join(FIXTURES, file), { device: 'cpu', normalization: 'device', ...options });
      try {
        expect(host.normalization).to.equal('host');
        expect(onDevice.normalization).to.equal('device');
        for (const workers of [0, 2]) {
          const a = await host.embedItems(withBad, { workers, skipBadImages: true });
          const b = await onDevice.embedItems(withBad, { workers, skipBadImages: true });
          expect(b.set.ids, `${file}, ${workers} workers`).to.deep.equal(imageNames);
          expect(b.set.ids).to.deep.equal(a.set.ids);
          expect(Buffer.from(b.set.vectors.buffer).equals(Buffer.from(a.set.vectors.buffer)), `${file}, ${workers} workers`).to.equal(true);
          expect(b.failures).to.deep.equal(a.failures);
        }
        // embedTensor still takes normalised float32 input, as before.
        const p = onDevice.preprocessing;
        const batch = Float32Array.from({ length: 2 * p.channels * p.height * p.width }, (_, i) => Math.sin(i));
        expect([...(await onDevice.embedTensor(batch, 2))]).to.deep.equal([...(await host.embedTensor(batch, 2))]);
      } finally {
        await host.release();
        await onDevice.release();
      }
    }
  });

  it("normalization is 'host' by default; 'device' needs a float32 input; anything else is E_ARG", async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', preprocessing: { resizeShorter: 32 } });
    expect(embedder.normalization).to.equal('host');
    await embedder.release();
    const fp16 = path.resolve('spec/fixtures/hub/vit/onnx/model_fp16.onnx');
    await expectDmlError(
      OnnxEmbedder.open(fp16, { device: 'cpu', normalization: 'device' }),
      'E_ARG',
      `Expected 'host' for ${fp16}, whose image input "pixel_values" takes float16 ('device' needs a float32 input) for normalization but received "device"`,
    );
    expect((await OnnxEmbedder.open(fp16, { device: 'cpu' }).then(async (e) => (await e.release(), e))).normalization).to.equal('host');
    await expectDmlError(
      OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', normalization: 'gpu' as 'device' }),
      'E_ARG',
      `Expected one of 'host', 'device' for normalization but received "gpu"`,
    );
  });

  it('with augment, embeds exactly what loadImageBatch(augment) + embedTensor give, batch by batch, for the same seed', async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', batchSize: 3, preprocessing: { resizeShorter: 32 } });
    try {
      const augmentation = { scale: [0.3, 1] as [number, number], ratio: [0.75, 1.33] as [number, number], flipProbability: 0.5 };
      const { set } = await embedder.embedItems(items, { augment: { augmentation, rng: new Rng(11) } });
      const rng = new Rng(11);
      const expected: number[] = [];
      for (let start = 0; start < items.length; start += 3) {
        const batch = await loadImageBatch(items.slice(start, start + 3).map((it) => it.source), embedder.preprocessing, { augment: { augmentation, rng } });
        expected.push(...(await embedder.embedTensor(batch.data, batch.loaded.length)));
      }
      expect(Array.from(set.vectors)).to.deep.equal(expected);
      const plain = await embedder.embedItems(items, { workers: 0 });
      expect(Array.from(plain.set.vectors)).not.to.deep.equal(expected);
      await expectDmlError(embedder.embedItems(items, { workers: 2, augment: { augmentation, rng } }), 'E_ARG', /augment/);
    } finally {
      await embedder.release();
    }
  });

  it('decodes in process below DECODE_POOL_MIN_ITEMS images unless workers is given', () => {
    expect(decodeProcessCount(DECODE_POOL_MIN_ITEMS - 1, undefined)).to.equal(0);
    expect(decodeProcessCount(DECODE_POOL_MIN_ITEMS, undefined)).to.equal(defaultDecodeWorkers());
    expect(decodeProcessCount(8, 2)).to.equal(2);
    expect(decodeProcessCount(10_000, 0)).to.equal(0);
    expect(decodeProcessCount(0, 2)).to.equal(0);
  });

  it('caches by model, preprocessing and manifest: an identical second run does not re-embed', async () => {
    const embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', preprocessing: { resizeShorter: 32 } });
    try {
      const first = await embedItemsCached(embedder, items, 'hash-1', dir);
      expect(first.fromCache).to.equal(false);
      const second = await embedItemsCached(embedder, items, 'hash-1', dir);
      expect(second.fromCache).to.equal(true);
      expect(Array.from(second.set.vectors)).to.deep.equal(Array.from(first.set.vectors));
      expect(second.set.ids).to.deep.equal(first.set.ids);
      const other = await embedItemsCached(embedder, items, 'hash-2', dir);
      expect(other.fromCache).to.equal(false);
      expect(readdirSync(dir).filter((f) => f.endsWith('.npy'))).to.have.length(2);
    } finally {
      await embedder.release();
    }
  });

  /** A 1x1 "model" computing x * scale over a [batch, 1, 2, 2] input, flattened to [batch, 4]. */
  async function scaleModel(scale: number, outputDims: Array<number | string> = ['batch', 4]): Promise<string> {
    const file = path.join(dir, `scale-${scale}.onnx`);
    const bytes = encodeModel({
      graphName: 'scale',
      inputs: [tensorValueInfo('x', 'float32', ['batch', 1, 2, 2])],
      outputs: [tensorValueInfo('y', 'float32', outputDims)],
      initializers: [floatTensor('s', [1], [scale])],
      nodes: outputDims.length === 2 ? [node('Mul', ['x', 's'], ['m']), node('Flatten', ['m'], ['y'], { axis: { i: 1 } })] : [node('Mul', ['x', 's'], ['y'])],
    });
    await writeFileAtomic(file, bytes);
    return file;
  }

  it('reports NaN embeddings as E_EMBEDDING naming the model and row', async () => {
    const embedder = await OnnxEmbedder.open(await scaleModel(Number.NaN), { device: 'cpu', preprocessing: { resizeShorter: 2, mean: [0], std: [1] } });
    try {
      await embedder.embedItems(items.slice(0, 1));
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(DmlError);
      expect((err as DmlError).code).to.equal('E_EMBEDDING');
      expect((err as DmlError).message).to.match(/scale-NaN\.onnx: embedding row 0 contains NaN/);
    } finally {
      await embedder.release();
    }
  });

  it('rejects a model whose output is not [N, D] before embedding anything', async () => {
    try {
      await OnnxEmbedder.open(await scaleModel(2, ['batch', 1, 2, 2]), { device: 'cpu' });
      expect.fail('should throw');
    } catch (err) {
      expect((err as DmlError).code).to.equal('E_MODEL');
      expect((err as DmlError).message).to.match(/output "y" has shape \[batch, 1, 2, 2\]; expected \[N, D\]/);
    }
  });

  it('runs a model that does not declare its output rank once at open, and rejects a 3-D output with its real shape', async () => {
    // Squeeze without axes on [batch, 1, 2, 2]: onnxruntime cannot infer the rank (batch may be 1), so
    // the output's declared shape is []; on a batch of 2 it is [2, 2, 2], a sequence of vectors per image.
    const file = path.join(dir, 'squeeze.onnx');
    const squeeze = (extra: ReturnType<typeof node>[], out: string): Uint8Array =>
      encodeModel({
        graphName: 'squeeze',
        inputs: [tensorValueInfo('x', 'float32', ['batch', 1, 2, 2])],
        outputs: [{ name: 'y', type: { tensorType: { elemType: 1 } } }],
        initializers: [int64Tensor('axes', [1], [1])],
        nodes: [node('Squeeze', ['x', ...(out === 'y' ? [] : ['axes'])], [out]), ...extra],
      });
    await writeFileAtomic(file, squeeze([], 'y'));
    await expectDmlError(
      OnnxEmbedder.open(file, { device: 'cpu' }),
      'E_MODEL',
      `${file}: output "y" has shape [2, 2, 2] on a batch of 2 images (the model does not declare it); expected [N, D] embeddings, here [2, D]`,
    );
    // The same undeclared output flattened to [N, 4] is accepted, its dimension found by the probe.
    await writeFileAtomic(file, squeeze([node('Flatten', ['s'], ['y'], { axis: { i: 1 } })], 's'));
    const embedder = await OnnxEmbedder.open(file, { device: 'cpu', preprocessing: { resizeShorter: 2, mean: [0], std: [1] } });
    try {
      expect(embedder.embeddingDim).to.equal(4);
      expect((await embedder.embedItems(items.slice(0, 3))).set.dim).to.equal(4);
    } finally {
      await embedder.release();
    }
  });

  it('names the file of a malformed model and says it is not a valid ONNX model', async () => {
    const file = path.join(dir, 'cut.onnx');
    const whole = encodeModel({ graphName: 'g', inputs: [tensorValueInfo('x', 'float32', ['batch', 1, 2, 2])], outputs: [tensorValueInfo('x', 'float32', ['batch', 1, 2, 2])], nodes: [] });
    await writeFileAtomic(file, whole.subarray(0, whole.length - 5));
    await expectDmlError(OnnxEmbedder.open(file, { device: 'cpu' }), 'E_MODEL', `${file} is not a valid ONNX model: truncated varint in ModelProto at byte ${whole.length - 5}`);
    await writeFileAtomic(file, 'not a model\n');
    await expectDmlError(OnnxEmbedder.open(file, { device: 'cpu' }), 'E_MODEL', new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a valid ONNX model: `));
  });

  it('reports a missing model file as E_NOT_FOUND', async () => {
    try {
      await OnnxEmbedder.open(path.join(dir, 'nope.onnx'));
      expect.fail('should throw');
    } catch (err) {
      expect((err as DmlError).code).to.equal('E_NOT_FOUND');
      expect((err as DmlError).message).to.contain('nope.onnx');
    }
  });
});
