import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { onCpuBackend } from '../../helpers/tf-backend.js';
import * as tf from '@tensorflow/tfjs';
import { saveCheckpoint } from '../../../lib/train/checkpoint-io.js';
import { buildModel } from '../../../lib/train/models/build-model.js';
import { loadLayersModelFromFile } from '../../../lib/train/models/tfjs-files.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const FIXTURE = path.resolve('spec/fixtures/train/tiny-keras');
const MODEL_JSON = path.join(FIXTURE, 'model.json');
const expected = JSON.parse(readFileSync(path.join(FIXTURE, 'expected.json'), 'utf8')) as {
  inputShape: number[];
  input: number[];
  outputShape: number[];
  output: number[];
};

function outputs(model: tf.LayersModel, x: tf.Tensor): number[] {
  return tf.tidy(() => Array.from((model.predict(x) as tf.Tensor).dataSync()));
}

describe('train/models: tfjs layers models from files and as backbones', () => {
  let dir: string;
  onCpuBackend();
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-tfjs-files-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the converter-layout fixture (Keras Functional topology, two shards split mid-weight) from disk', async () => {
    const model = await loadLayersModelFromFile(MODEL_JSON);
    expect(model.layers.map((l) => l.getClassName())).to.deep.equal(['InputLayer', 'Conv2D', 'BatchNormalization']);
    const x = tf.tensor(expected.input, expected.inputShape);
    const y = model.predict(x) as tf.Tensor;
    expect(y.shape).to.deep.equal(expected.outputShape);
    const got = Array.from(y.dataSync());
    const worst = Math.max(...got.map((v, i) => Math.abs(v - (expected.output[i] as number))));
    expect(worst, 'against the float64 reference forward pass').to.be.below(1e-5);
    tf.dispose([x, y]);
    model.dispose();
  });

  it('builds backbone + pooling + head with unit-norm outputs; reproducible from the seed; frozen on request', async () => {
    const spec = { kind: 'tfjs-backbone' as const, modelJson: MODEL_JSON, embeddingDim: 4, hidden: [5] };
    const model = await buildModel(spec, 3);
    expect(model.layers.map((l) => l.name)).to.deep.equal([
      'image',
      'conv',
      'bn',
      'head_pool',
      'head_dense_1',
      'head_act_1',
      'head_embedding',
      'head_l2norm',
    ]);
    expect(model.getLayer('head_pool').getClassName()).to.equal('GlobalAveragePooling2D');
    const x = tf.randomNormal([3, 5, 5, 2], 0, 1, 'float32', 5);
    const y = model.predict(x) as tf.Tensor;
    expect(y.shape).to.deep.equal([3, 4]);
    const v = y.dataSync();
    for (let r = 0; r < 3; r++) expect(Math.hypot(...Array.from(v.subarray(r * 4, r * 4 + 4)))).to.be.closeTo(1, 1e-6);
    expect(model.trainableWeights.map((w) => w.originalName)).to.include('conv/kernel');

    const again = await buildModel(spec, 3);
    expect(outputs(again, x)).to.deep.equal(Array.from(v));

    const frozen = await buildModel({ ...spec, trainBackbone: false, outputLayer: 'conv', pooling: 'max' }, 3);
    expect(frozen.getLayer('head_pool').getClassName()).to.equal('GlobalMaxPooling2D');
    expect(frozen.trainableWeights.map((w) => w.originalName)).to.deep.equal([
      'head_dense_1/kernel',
      'head_dense_1/bias',
      'head_embedding/kernel',
      'head_embedding/bias',
    ]);
    tf.dispose([x, y]);
    for (const m of [model, again, frozen]) m.dispose();
  });

  it('a model saved with the checkpoint writer reloads from its model.json with identical outputs', async () => {
    const model = await buildModel({ kind: 'tfjs-backbone', modelJson: MODEL_JSON, embeddingDim: 3 }, 1);
    const random = await buildModel({ kind: 'cnn', inputShape: [4, 4, 1], filters: [2], hidden: [], embeddingDim: 3 }, 2);
    for (const [m, shape] of [
      [model, [2, 5, 5, 2]],
      [random, [2, 4, 4, 1]],
    ] as const) {
      const target = path.join(dir, m.name);
      await saveCheckpoint(target, { model: m });
      const reloaded = await loadLayersModelFromFile(path.join(target, 'model.json'));
      const x = tf.randomNormal([...shape], 0, 1, 'float32', 6);
      expect(outputs(reloaded, x)).to.deep.equal(outputs(m, x));
      x.dispose();
      reloaded.dispose();
    }
    model.dispose();
    random.dispose();
  });

  it('names the problem with a missing, malformed or inconsistent model', async () => {
    const copy = (name: string): string => {
      const p = path.join(dir, name);
      copyFileSync(path.join(FIXTURE, name), p);
      return p;
    };
    await expectDmlError(loadLayersModelFromFile(path.join(dir, 'model.json')), 'E_NOT_FOUND', `Cannot read model ${path.join(dir, 'model.json')}: no such file`);
    const json = copy('model.json');
    copy('group1-shard1of2.bin');
    await expectDmlError(loadLayersModelFromFile(json), 'E_NOT_FOUND', `Cannot read weight shard ${path.join(dir, 'group1-shard2of2.bin')}: no such file`);
    writeFileSync(path.join(dir, 'group1-shard2of2.bin'), new Uint8Array(10));
    await expectDmlError(loadLayersModelFromFile(json), 'E_MODEL', `${json}: the weight shards hold 210 bytes but the weightsManifest describes 276`);

    const parsed = JSON.parse(readFileSync(json, 'utf8')) as { weightsManifest: Array<{ paths: string[] }>; format: string };
    (parsed.weightsManifest[0] as { paths: string[] }).paths[1] = '../../etc/passwd';
    writeFileSync(json, JSON.stringify(parsed));
    await expectDmlError(loadLayersModelFromFile(json), 'E_MODEL', `${json}: weight shard path "../../etc/passwd" leaves the model's folder`);
    writeFileSync(json, JSON.stringify({ ...parsed, format: 'graph-model' }));
    await expectDmlError(loadLayersModelFromFile(json), 'E_MODEL', /is a TensorFlow.js graph model, which cannot be trained; convert the model with tensorflowjs_converter --output_format=tfjs_layers_model$/);
    writeFileSync(json, '{"modelTopology": ');
    await expectDmlError(loadLayersModelFromFile(json), 'E_MODEL', /: not valid JSON: /);

    await expectDmlError(
      buildModel({ kind: 'tfjs-backbone', modelJson: MODEL_JSON, embeddingDim: 2, outputLayer: 'fc' }, 0),
      'E_ARG',
      `Expected a layer of ${MODEL_JSON} (image, conv, bn) for model.outputLayer but received "fc"`,
    );
  });
});
