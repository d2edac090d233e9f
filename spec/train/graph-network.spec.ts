/**
 * The `onnx` training backend (lib/train/graph-network.ts): the trained values written back into the
 * TensorFlow.js model give what the trained ONNX graph gives; a run on it reports its device, exports,
 * and refuses a resume across engines; the optimiser mapping. (Its kill -9 resume is in run-folder.spec.ts.)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { exportCheckpoint } from '../../lib/export/export-model.js';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import ort from '../../lib/onnx/ort.js';
import { parseTrainConfig } from '../../lib/train/config.js';
import { GraphNetwork, graphOptimizerSettings } from '../../lib/train/graph-network.js';
import { createLoss } from '../../lib/train/losses/registry.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import type { ModelSpec } from '../../lib/train/models/model-spec.js';
import { train } from '../../lib/train/trainer.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { expectValidTrainReport } from '../helpers/report-schema.js';
import { onCpuBackend } from '../helpers/tf-backend.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const convnet = { kind: 'convnet', inputShape: [28, 28, 1], widths: [8, 16], depth: 1, poolBatchNorm: true, embeddingDim: 8 };

describe('train: the onnx backend (graph trainer)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    onCpuBackend();
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-graph-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the trained values back: the TensorFlow.js model then computes what the trained ONNX graph computes', async () => {
    const config = parseTrainConfig(tinyTrainConfig(path.join(dir, 'unused'), { backend: 'onnx', device: 'cpu', model: convnet }), 'spec');
    const model = await buildModel(config.model as ModelSpec, 3);
    const network = await GraphNetwork.create(model, config.optimizer, 'cpu');
    const x = tf.randomUniform([6, 28, 28, 1], 0, 1, 'float32', 5);
    const before = model.getWeights().map((w) => Array.from(w.dataSync()));
    network.writeBack();
    expect(model.getWeights().map((w) => Array.from(w.dataSync())), 'a write-back of untrained values changes nothing').to.deep.equal(before);
    const labels = Int32Array.from([0, 0, 1, 1, 2, 2]);
    const result = await network.trainBatch(x, labels, createLoss({ name: 'ephn' }), tf.train.adam(0.01), 0.05);
    expect(result.validCount).to.equal(6);
    network.writeBack();
    const after = model.getWeights().map((w) => Array.from(w.dataSync()));
    expect(after.filter((w, i) => w.some((v, k) => v !== before[i]?.[k])).length, 'weights and moving statistics moved').to.equal(model.getWeights().length);
    const session = await ort.InferenceSession.create(network.trainer.exportModel());
    const onnx = await session.run({ input: new ort.Tensor('float32', x.dataSync() as Float32Array, [6, 28, 28, 1]) });
    const expected = (model.predict(x) as tf.Tensor).dataSync();
    const actual = onnx['embedding']?.data as Float32Array;
    expect(actual.length).to.equal(expected.length);
    actual.forEach((v, i) => expect(v).to.be.closeTo(expected[i] as number, 1e-5));
    await Promise.all([session.release(), network.trainer.release()]);
    x.dispose();
  });

  it('trains a convnet, reports the device it ran on, and exports; a TensorFlow.js backend refuses to resume it', async () => {
    const out = path.join(dir, 'run');
    const config = parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model: convnet }), 'spec');
    const result = await train(config);
    expect(result.backend).to.equal('onnx');
    expect(result.device).to.deep.equal({ provider: 'cpu', attempts: [{ provider: 'cpu' }] });
    const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as unknown;
    expectValidTrainReport(report);
    expect(result.history.map((r) => r.epoch)).to.deep.equal([0, 1]);
    expect(result.history[1]?.loss).to.be.a('number').and.to.be.below(2);
    const exported = await exportCheckpoint(out, { out: path.join(dir, 'run.onnx') });
    expect(exported.out).to.equal(path.join(dir, 'run.onnx'));
    await expectDmlError(
      train(parseTrainConfig(tinyTrainConfig(out, { backend: 'cpu', model: convnet, epochs: 2 }), 'spec'), { resume: true }),
      'E_ARG',
      `Cannot resume from ${path.join(out, 'checkpoints/last')} on backend cpu: it was written by the onnx backend, whose optimiser state the other cannot continue; resume it with --backend onnx`,
    );
  });

  it('trains a PyTorch-exported network (model.kind onnx, cut with a new head), resumes it bit for bit and exports it', async () => {
    const model = {
      kind: 'onnx',
      path: fileURLToPath(new URL('../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url)),
      output: '/block2/relu_1/Relu_output_0',
      head: { pooling: 'avgmax', batchNorm: true, embeddingDim: 8 },
    };
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 16, width: 16, channels: 3 } };
    const config = (out: string, epochs: number): ReturnType<typeof parseTrainConfig> => parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data, epochs }), 'spec');
    const resumed = path.join(dir, 'onnx-kind');
    const first = await train(config(resumed, 1));
    expect(first.backend).to.equal('onnx');
    expect(first.history[1]?.validation?.queryCount).to.be.above(0);
    expect(existsSync(path.join(resumed, 'checkpoints', 'last', 'model.onnx'))).to.equal(true);
    await train(config(resumed, 2), { resume: true });
    const whole = path.join(dir, 'onnx-kind-whole');
    await train(config(whole, 2));
    const weights = (out: string): Map<string, number[]> =>
      new Map([...readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers].map(([k, v]) => [k, Array.from(v.data)]));
    expect(weights(resumed)).to.deep.equal(weights(whole));
    const initial = readOnnxGraph(new Uint8Array(readFileSync(model.path)), 'initial').initializers.get('stem.0.weight')?.data;
    expect(weights(whole).get('stem.0.weight'), 'the backbone trained').to.not.deep.equal(Array.from(initial ?? []));
    const exported = await exportCheckpoint(resumed, { out: path.join(dir, 'onnx-kind.onnx') });
    expect([exported.embeddingDim, exported.inputName, exported.parity.maxAbsDiff]).to.deep.equal([8, 'input', 0]);
    expect(exported.preprocessing).to.include({ height: 16, width: 16, channels: 3, layout: 'NHWC' });
  });

  it('a device that cannot run the step fails before the run folder is touched', async () => {
    // This repository installs onnxruntime-node without its CUDA provider (.npmrc: onnxruntime-node-install=skip).
    const out = path.join(dir, 'no-cuda');
    await expectDmlError(train(parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cuda' }), 'spec')), 'E_MODEL', /^Cannot create an onnxruntime session for network .* \(device cuda\) — cuda: /);
    expect(existsSync(out), 'no run folder').to.equal(false);
  });

  it('a device with a TensorFlow.js backend is refused', () => {
    expect(() => parseTrainConfig(tinyTrainConfig(path.join(dir, 'x'), { backend: 'cpu', device: 'webgpu' }), 'spec')).to.throw(/device: chooses where the onnx backend runs; with backend cpu remove it \(got webgpu\)/);
  });

  it("maps the optimizer section to PyTorch's optimisers (AdamW with weight decay, SGDW)", () => {
    const base = { learningRate: 0.1, momentum: 0.9, weightDecay: 0, milestones: [], gamma: 0.1, schedule: { kind: 'milestones' as const } };
    expect(graphOptimizerSettings({ ...base, kind: 'adam' })).to.deep.equal({ kind: 'adam' });
    expect(graphOptimizerSettings({ ...base, kind: 'adam', weightDecay: 0.01 })).to.deep.equal({ kind: 'adamw', weightDecay: 0.01 });
    expect(graphOptimizerSettings({ ...base, kind: 'momentum', weightDecay: 0.01 })).to.deep.equal({ kind: 'sgd', momentum: 0.9, weightDecay: 0.01, decoupledWeightDecay: true });
    expect(graphOptimizerSettings({ ...base, kind: 'sgd' })).to.deep.equal({ kind: 'sgd', weightDecay: 0, decoupledWeightDecay: true });
  });
});
