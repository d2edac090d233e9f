/**
 * @file End-to-end export tests: ResNet- and MobileNetV2-style embedders and a composed backbone +
 * head go through exportEmbedder (parity within 1e-4, metadata the evaluator reads back, outputs equal
 * to tfjs through OnnxEmbedder); checkpoint export writes atomically and refuses (writing nothing) an
 * unsupported layer, an unwritable path, and a model whose ONNX output disagrees with tfjs.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { composeBackboneAndHead } from '../../lib/export/compose.js';
import { exportCheckpoint, exportEmbedder } from '../../lib/export/export-model.js';
import { registerLayerConverter } from '../../lib/engine/tfjs/layer-converters.js';
import { permuteArray } from '../../lib/util/permute-array.js';
import { convertLayersModel } from '../../lib/engine/tfjs/tfjs-to-onnx.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { decodeModel, encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { DML_METADATA_KEYS } from '../../lib/onnx/dml-metadata.js';
import { readModelMetadata } from '../../lib/onnx/metadata.js';
import { saveCheckpoint } from '../../lib/train/checkpoint-io.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import { Rng } from '../../lib/util/rng.js';
import { expectDmlError, expectDmlErrorSync } from '../helpers/expect-dml-error.js';
import { onCpuBackend } from '../helpers/tf-backend.js';
import { mobileNetV2Style, randomizeWeights, resnetStyle } from './export-support.js';

const BACKBONE = path.resolve('models/default.onnx');
const IMAGENET: Preprocessing = { height: 32, width: 32, resizeShorter: 36, channels: 3, layout: 'NHWC', mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** A layer tfjs computes as 1.01 x; its deliberately wrong converter says identity. */
class Amplify extends tf.layers.Layer {
  static className = 'DmlSpecAmplify';
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.mul(Array.isArray(inputs) ? (inputs[0] as tf.Tensor) : inputs, 1.01);
  }
}
tf.serialization.registerClass(Amplify);
registerLayerConverter('DmlSpecAmplify', (_g, call) => [{ name: call.inputs[0]!.name, nchw: call.inputs[0]!.nchw }]);

/** Images of the embedder's preprocessing, NHWC random pixels -> the embedder's layout. */
function randomBatch(pre: Preprocessing, rows: number, seed: number): { nhwc: Float32Array; batch: Float32Array } {
  const rng = new Rng(seed);
  const nhwc = Float32Array.from({ length: rows * pre.height * pre.width * pre.channels }, (_, i) => (rng.next() - pre.mean[i % pre.channels]!) / pre.std[i % pre.channels]!);
  const batch = pre.layout === 'NCHW' ? permuteArray(nhwc, [rows, pre.height, pre.width, pre.channels], [0, 3, 1, 2]) : nhwc;
  return { nhwc, batch };
}

describe('export/export-model', function () {
  this.timeout(60000);
  onCpuBackend();
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-export-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, build] of [
    ['ResNet-style', resnetStyle],
    ['MobileNetV2-style', mobileNetV2Style],
  ] as const) {
    it(`exports a random-weight ${name} network: parity within 1e-4, metadata the evaluator reads back`, async () => {
      const model = build(11);
      const exported = await exportEmbedder(model, { preprocessing: IMAGENET, trainingConfigHash: 'abc' });
      expect(exported.parity.maxAbsDiff).to.be.below(1e-4);
      expect(exported.parity.minCosine).to.be.above(0.9999);
      expect(exported.parity.rows).to.equal(8);
      expect(exported.inputDims).to.deep.equal(['batch', 3, 32, 32]);
      expect(exported.embeddingDim).to.equal(16);
      const file = path.join(dir, 'model.onnx');
      writeFileSync(file, exported.bytes);
      const meta = readModelMetadata(exported.bytes);
      expect(meta.opsetVersion).to.equal(17);
      expect(meta.metadataProps).to.deep.include({ [DML_METADATA_KEYS.embeddingDim]: '16', [DML_METADATA_KEYS.distance]: 'cosine', [DML_METADATA_KEYS.trainingConfigHash]: 'abc' });
      expect(meta.metadataProps[DML_METADATA_KEYS.version]).to.match(/^\d+\.\d+\.\d+/);

      const embedder = await OnnxEmbedder.open(file, { device: 'cpu' });
      try {
        expect(embedder.preprocessing).to.deep.equal({ ...IMAGENET, layout: 'NCHW' });
        expect(Object.values(embedder.signature.preprocessingSources).every((s) => s === 'metadata')).to.equal(true);
        expect(embedder.signature).to.deep.include({ inputName: 'image', outputName: 'embedding', fixedBatch: null, outputDim: 16 });
        const { nhwc, batch } = randomBatch(embedder.preprocessing, 5, 3);
        const viaOrt = await embedder.embedTensor(batch, 5);
        const viaTfjs = tf.tidy(() => (model.predict(tf.tensor(nhwc, [5, 32, 32, 3])) as tf.Tensor).dataSync());
        expect(Math.max(...viaOrt.map((v, i) => Math.abs(v - viaTfjs[i]!)))).to.be.below(1e-4);
      } finally {
        await embedder.release();
      }
      model.dispose();
    });
  }

  describe('composition', () => {
    it('composes models/default.onnx (PCA-64) with an MLP head into one image -> embedding model', async () => {
      const head = await buildModel({ kind: 'mlp', inputDim: 64, hidden: [16], embeddingDim: 8, batchNorm: true }, 5);
      randomizeWeights(head, 5);
      const exported = await exportEmbedder(head, { backbone: BACKBONE });
      expect(exported.parity.maxAbsDiff).to.be.below(1e-4);
      expect(exported.backbone?.path).to.equal(BACKBONE);
      expect(exported.inputName).to.equal('image');
      expect(exported.inputDims).to.deep.equal(['batch', 1, 28, 28]);
      expect(exported.preprocessing).to.deep.equal({ height: 28, width: 28, resizeShorter: 28, channels: 1, layout: 'NCHW', mean: [0], std: [1] });
      const graph = decodeModel(exported.bytes, 'composed').graph!;
      const names = [...graph.node!.flatMap((n) => n.output!), ...graph.initializer!.map((t) => t.name!)];
      expect(names.filter((n) => n !== 'embedding').every((n) => /^(backbone|seam|head)\//.test(n))).to.equal(true);
      expect(names).to.include.members(['backbone/projection', 'seam/features', 'head/head_embedding/kernel']);

      // The composed file equals the training pipeline: backbone (normalised rows) then the tfjs head.
      const file = path.join(dir, 'composed.onnx');
      writeFileSync(file, exported.bytes);
      const [composed, backbone] = await Promise.all([OnnxEmbedder.open(file, { device: 'cpu' }), OnnxEmbedder.open(BACKBONE, { device: 'cpu' })]);
      try {
        const { batch } = randomBatch(composed.preprocessing, 4, 9);
        const features = await backbone.embedTensor(batch, 4);
        const expected = tf.tidy(() => (head.predict(tf.tensor(features, [4, 64])) as tf.Tensor).dataSync());
        const actual = await composed.embedTensor(batch, 4);
        expect(Math.max(...actual.map((v, i) => Math.abs(v - expected[i]!)))).to.be.below(1e-4);
      } finally {
        await Promise.all([composed.release(), backbone.release()]);
      }
    });

    it('composes an exported tfjs CNN backbone with a head', async () => {
      const cnn = resnetStyle(21);
      const backboneFile = path.join(dir, 'resnet.onnx');
      writeFileSync(backboneFile, (await exportEmbedder(cnn, { preprocessing: IMAGENET })).bytes);
      const head = await buildModel({ kind: 'mlp', inputDim: 16, hidden: [], embeddingDim: 4 }, 1);
      const exported = await exportEmbedder(head, { backbone: backboneFile });
      expect(exported.parity.maxAbsDiff).to.be.below(1e-4);
      expect(exported.preprocessing).to.deep.equal({ ...IMAGENET, layout: 'NCHW' });
      expect(exported.embeddingDim).to.equal(4);
    });

    it('checks the seam: feature width, opset range, one image input', async () => {
      const wide = await buildModel({ kind: 'mlp', inputDim: 32, hidden: [], embeddingDim: 4 }, 1);
      await expectDmlError(exportEmbedder(wide, { backbone: BACKBONE }), 'E_MODEL', `Cannot compose backbone ${BACKBONE} with the head: its output embedding has 64 features but the head takes 32`);
      const head = convertLayersModel(wide, { inputName: 'features' });
      const backboneAt = (version: number): Uint8Array =>
        encodeModel({
          graphName: 'old',
          inputs: [tensorValueInfo('x', 'float32', ['batch', 1, 2, 2])],
          outputs: [tensorValueInfo('y', 'float32', ['batch', 32])],
          initializers: [floatTensor('w', [4, 32], new Float32Array(128))],
          nodes: [node('Flatten', ['x'], ['f'], { axis: { i: 1 } }), node('MatMul', ['f', 'w'], ['y'])],
          opsetImports: [{ domain: '', version }],
        });
      expectDmlErrorSync(
        () => composeBackboneAndHead({ backbone: decodeModel(backboneAt(11), 'old.onnx'), backboneName: 'old.onnx', head }),
        'E_MODEL',
        'Cannot compose backbone old.onnx with the head: it uses default-domain opset 11; expected 13 to 17 (re-export the backbone at such an opset)',
      );
      const composed = composeBackboneAndHead({ backbone: decodeModel(backboneAt(13), 'ok.onnx'), backboneName: 'ok.onnx', head });
      expect(composed.opsetImports).to.deep.equal([{ domain: '', version: 13 }]);
      expect(composed.inputName).to.equal('x');
      const bytes = encodeModel({ graphName: 'composed', ...composed });
      expect(readModelMetadata(bytes)).to.deep.include({ opsetVersion: 13, irVersion: 8 });
      expectDmlErrorSync(() => decodeModel(Uint8Array.from([0x0a, 0xff]), 'junk.onnx'), 'E_MODEL', /^junk\.onnx is not a readable ONNX model: /);
      const vector = await buildModel({ kind: 'mlp', inputDim: 4, hidden: [], embeddingDim: 2 }, 1);
      await expectDmlError(
        exportEmbedder(resnetStyle(1), { backbone: BACKBONE }),
        'E_MODEL',
        /^resnet_style takes \[, 32, 32, 3\]; only a head on feature vectors \[batch, D\] can be composed/,
      );
      await expectDmlError(exportEmbedder(vector), 'E_ARG', /^Expected the training preprocessing \(or a backbone\) to export a model on feature vectors/);
    });
  });

  describe('exportCheckpoint', () => {
    /** A run folder with `model` as checkpoints/last and a config.json naming `image`. */
    async function run(model: tf.LayersModel, image: Record<string, unknown> = { height: 8, width: 8, channels: 1 }): Promise<string> {
      const out = path.join(dir, 'run');
      await saveCheckpoint(path.join(out, 'checkpoints', 'last'), { model, state: { epoch: 1, configHash: 'f00d' } });
      writeFileSync(path.join(out, 'config.json'), JSON.stringify({ data: { dataset: 'folder:x', image }, model: { kind: 'cnn' } }));
      return out;
    }
    const cnn = (): Promise<tf.LayersModel> => buildModel({ kind: 'cnn', inputShape: [8, 8, 1], filters: [2], hidden: [4], embeddingDim: 3, batchNorm: true }, 2);

    it('writes the file from a run folder or its checkpoint folder, with the run preprocessing and config hash', async () => {
      const source = await run(await cnn(), { height: 8, width: 8, channels: 1, mean: [0.5], std: [0.25] });
      const out = path.join(dir, 'out', 'model.onnx');
      const lines: string[] = [];
      const result = await exportCheckpoint(source, { out, log: (l) => lines.push(l) });
      expect(result.preprocessing).to.deep.equal({ height: 8, width: 8, channels: 1, resizeShorter: 8, layout: 'NCHW', mean: [0.5], std: [0.25] });
      expect(lines.at(-1)).to.match(/^parity over 8 inputs: max abs difference \d\.\d\de-\d+, min cosine (1\.0000000|0\.99999\d\d)$/);
      const meta = readModelMetadata(readFileSync(out));
      expect(meta.metadataProps[DML_METADATA_KEYS.trainingConfigHash]).to.equal('f00d');
      expect(JSON.parse(meta.metadataProps[DML_METADATA_KEYS.preprocessing]!)).to.deep.equal(result.preprocessing);
      const again = await exportCheckpoint(path.join(source, 'checkpoints', 'last'), { out: path.join(dir, 'again.onnx'), layout: 'NHWC' });
      expect(again.inputDims).to.deep.equal(['batch', 8, 8, 1]);
      expect(readdirSync(path.join(dir, 'out'))).to.deep.equal(['model.onnx']);
    });

    it('refuses an unsupported layer, naming it and its class, and writes nothing', async () => {
      const input = tf.input({ shape: [4, 4, 1] });
      const up = tf.layers.upSampling2d({ size: [2, 2], name: 'up' }).apply(input) as tf.SymbolicTensor;
      const source = await run(tf.model({ inputs: input, outputs: tf.layers.flatten().apply(up) as tf.SymbolicTensor }), { height: 4, width: 4, channels: 1 });
      const out = path.join(dir, 'model.onnx');
      await expectDmlError(exportCheckpoint(source, { out }), 'E_MODEL', /^Cannot export layer up: its class UpSampling2D has no ONNX converter/);
      expect(existsSync(out)).to.equal(false);
    });

    it('refuses to write a model whose ONNX output differs from tfjs (parity above 1e-4)', async () => {
      const input = tf.input({ shape: [8, 8, 1] });
      const body = await cnn();
      const model = tf.model({ inputs: input, outputs: new Amplify({ name: 'amplify' }).apply(body.apply(input) as tf.SymbolicTensor) as tf.SymbolicTensor });
      const source = await run(model);
      const out = path.join(dir, 'model.onnx');
      await expectDmlError(exportCheckpoint(source, { out }), 'E_MODEL', /^Parity check failed for model\d*: onnxruntime and the reference differ by up to 0\.00\d+ \(tolerance 0\.0001; min cosine [\d.]+\) over 8 inputs; nothing was written$/);
      expect(readdirSync(dir)).to.deep.equal(['run']);
    });

    it('an unwritable output path is a clear E_IO error that leaves no partial file', async () => {
      const source = await run(await cnn());
      const blocker = path.join(dir, 'file');
      writeFileSync(blocker, 'not a folder');
      await expectDmlError(exportCheckpoint(source, { out: path.join(blocker, 'model.onnx') }), 'E_IO', new RegExp(`^Cannot create output folder ${blocker}: `));
      expect(readdirSync(dir).sort()).to.deep.equal(['file', 'run']);
      await expectDmlError(exportCheckpoint(source, { out: dir }), 'E_ARG', `Expected a file path, not a folder for out but received ${JSON.stringify(dir)}`);
    });

    it('names what is missing: checkpoint, run config, backbone', async () => {
      await expectDmlError(exportCheckpoint(path.join(dir, 'none'), { out: path.join(dir, 'm.onnx') }), 'E_NOT_FOUND', /^No checkpoint at .*none: expected a training run folder/);
      const ckpt = path.join(dir, 'loose');
      await saveCheckpoint(ckpt, { model: await cnn() });
      await expectDmlError(exportCheckpoint(ckpt, { out: path.join(dir, 'm.onnx') }), 'E_NOT_FOUND', /^No run configuration for checkpoint .*loose: expected .*config\.json/);
      const head = await buildModel({ kind: 'mlp', inputDim: 64, hidden: [], embeddingDim: 4 }, 1);
      const source = await run(head);
      await expectDmlError(exportCheckpoint(source, { out: path.join(dir, 'm.onnx'), backbone: path.join(dir, 'nope.onnx') }), 'E_NOT_FOUND', /^Cannot read backbone .*nope\.onnx: no such file$/);
    });
  });
});
