/**
 * The `onnx` training backend (lib/train/graph-network.ts): the trained values written back into the
 * TensorFlow.js model give what the trained ONNX graph gives; a run on it reports its device, exports,
 * and refuses a resume across engines; the optimiser mapping. (Its kill -9 resume is in run-folder.spec.ts.)
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { expect } from 'chai';
import { exportCheckpoint } from '../../lib/export/export-model.js';
import { evaluate } from '../../lib/facade.js';
import { readOnnxGraph } from '../../lib/engine/graph/onnx-ir.js';
import { permuteArray } from '../../lib/util/permute-array.js';
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

  it('trains a PyTorch-exported network (model.kind onnx, cut with a new head, its preprocessor config), resumes it bit for bit without the backbone file and exports it', async () => {
    const preprocessorConfig = path.join(dir, 'preprocessor_config.json');
    writeFileSync(preprocessorConfig, JSON.stringify({ size: { shortest_edge: 18 }, crop_size: { height: 16, width: 16 }, resample: 2, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }));
    // A copy of the backbone, removed before the resume: a resumed run needs only its checkpoint.
    const backbone = path.join(dir, 'resnet-triplet.onnx');
    copyFileSync(fileURLToPath(new URL('../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url)), backbone);
    const model = { kind: 'onnx', path: backbone, preprocessorConfig, output: '/block2/relu_1/Relu_output_0', head: { pooling: 'avgmax', batchNorm: true, embeddingDim: 8 } };
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 16, width: 16, channels: 3 } };
    const config = (out: string, epochs: number): ReturnType<typeof parseTrainConfig> => parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data, epochs }), 'spec');
    const resumed = path.join(dir, 'onnx-kind');
    const first = await train(config(resumed, 1));
    expect(first.backend).to.equal('onnx');
    // The training images are preprocessed as the backbone's preprocessor config says; config.json records it all.
    expect([first.preprocessorConfig, first.preprocessingSources?.resizeShorter, first.preprocessingSources?.height]).to.deep.equal([preprocessorConfig, 'preprocessor config', 'override']);
    const recorded = { height: 16, width: 16, channels: 3, resizeShorter: 18, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], resizeMode: 'shorter', resample: 'bilinear', cropRounding: 'floor', rescale: 1 / 255 };
    expect((JSON.parse(readFileSync(path.join(resumed, 'config.json'), 'utf8')) as { data: { image: unknown } }).data.image).to.deep.equal(recorded);
    expect(first.preprocessing).to.deep.equal({ ...recorded, layout: 'NHWC' });
    expect(first.history[1]?.validation?.queryCount).to.be.above(0);
    expect(existsSync(path.join(resumed, 'checkpoints', 'last', 'model.onnx'))).to.equal(true);
    const whole = path.join(dir, 'onnx-kind-whole');
    await train(config(whole, 2));
    const initial = readOnnxGraph(new Uint8Array(readFileSync(backbone)), 'initial').initializers.get('stem.0.weight')?.data;
    rmSync(backbone);
    rmSync(preprocessorConfig);
    const second = await train(config(resumed, 2), { resume: true });
    expect([second.preprocessing, second.preprocessingSources, second.preprocessorConfig]).to.deep.equal([first.preprocessing, first.preprocessingSources, preprocessorConfig]);
    const weights = (out: string): Map<string, number[]> =>
      new Map([...readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers].map(([k, v]) => [k, Array.from(v.data)]));
    expect(weights(resumed)).to.deep.equal(weights(whole));
    expect(weights(whole).get('stem.0.weight'), 'the backbone trained').to.not.deep.equal(Array.from(initial ?? []));
    // The backbone's NCHW input by default, the NHWC input it was trained with on request; the same network.
    const exported = await exportCheckpoint(resumed, { out: path.join(dir, 'onnx-kind.onnx') });
    expect([exported.embeddingDim, exported.inputName, exported.inputDims, exported.parity.maxAbsDiff]).to.deep.equal([8, 'input', ['batch', 3, 16, 16], 0]);
    expect(exported.preprocessing).to.deep.equal({ ...recorded, layout: 'NCHW' });
    expect(JSON.parse(exported.metadata['dml.preprocessing'] as string)).to.deep.equal({ ...recorded, layout: 'NCHW' });
    const nhwc = await exportCheckpoint(resumed, { out: path.join(dir, 'onnx-kind-nhwc.onnx'), layout: 'NHWC' });
    expect([nhwc.inputDims, nhwc.parity.maxAbsDiff, nhwc.preprocessing.layout]).to.deep.equal([['batch', 16, 16, 3], 0, 'NHWC']);
    const embed = async (file: string, data: Float32Array, dims: number[]): Promise<Float32Array> => {
      const session = await ort.InferenceSession.create(file);
      const out = await session.run({ input: new ort.Tensor('float32', data, dims) });
      await session.release();
      return out[session.outputNames[0] as string]?.data as Float32Array;
    };
    const pixels = Float32Array.from({ length: 2 * 16 * 16 * 3 }, (_, i) => Math.sin(i));
    const fromNchw = await embed(exported.out, permuteArray(pixels, [2, 16, 16, 3], [0, 3, 1, 2]), [2, 3, 16, 16]);
    const fromNhwc = await embed(nhwc.out, pixels, [2, 16, 16, 3]);
    expect(Math.max(...Array.from(fromNchw, (v, i) => Math.abs(v - (fromNhwc[i] as number))))).to.be.below(1e-6);
  });

  it("fine-tunes a Hub-format Vision Transformer (onnx/model.onnx) on images prepared as its preprocessor_config.json says", async () => {
    const out = path.join(dir, 'hub-vit');
    const model = { kind: 'onnx', path: fileURLToPath(new URL('../fixtures/hub/vit/onnx/model.onnx', import.meta.url)), output: 'pooler_output', head: { embeddingDim: 8 } };
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal' };
    const result = await train(parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data }), 'spec'));
    expect(result.preprocessorConfig).to.equal(fileURLToPath(new URL('../fixtures/hub/vit/preprocessor_config.json', import.meta.url)));
    expect(new Set(Object.values(result.preprocessingSources ?? {}))).to.deep.equal(new Set(['preprocessor config']));
    expect(result.preprocessing).to.include({ height: 32, width: 32, resizeMode: 'exact', resample: 'bilinear', layout: 'NHWC' });
    expect(result.preprocessing.mean).to.deep.equal([0.5, 0.5, 0.5]);
    expect(result.warnings).to.deep.equal([]);
    // The class token and the position embeddings (PyTorch parameters, not operator weights) trained too.
    const initial = readOnnxGraph(new Uint8Array(readFileSync(model.path)), 'initial').initializers;
    const trained = readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers;
    for (const name of ['cls', 'pos', 'norm1.weight', 'patch.weight']) expect(Array.from(trained.get(name)?.data ?? []), name).to.not.deep.equal(Array.from(initial.get(name)?.data ?? []));
  });

  it("fine-tunes the shipped models/default.onnx (ends in LpNormalization) with backend auto, as the README's example does", async () => {
    const out = path.join(dir, 'shipped');
    const recipe = JSON.parse(readFileSync('scripts/configs/fashion-mnist-finetune.json', 'utf8')) as Record<string, unknown>;
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 28, width: 28, channels: 1 } };
    const result = await train(parseTrainConfig(tinyTrainConfig(out, { model: recipe.model, backend: recipe.backend, optimizer: recipe.optimizer, data }), 'spec'));
    expect([result.engineSelection.requested, result.engineSelection.engine]).to.deep.equal(['auto', 'onnx']);
    const initial = readOnnxGraph(new Uint8Array(readFileSync('models/default.onnx')), 'shipped').initializers;
    const trained = readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers;
    expect(Array.from(trained.get('projection')?.data ?? [])).to.have.length(784 * 64).and.not.deep.equal(Array.from(initial.get('projection')?.data ?? []));
  });

  it("trains PyTorch's eval-mode export of fresh BatchNorms (aliased initializers): the checkpoint holds each tensor under its own name, and its validation is what dml eval of the export measures", async () => {
    const model = { kind: 'onnx', path: fileURLToPath(new URL('../fixtures/user-exports/aliased.onnx', import.meta.url)), preprocessorConfig: false };
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 8, width: 8, channels: 3 } };
    const out = path.join(dir, 'aliased');
    const result = await train(parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data }), 'spec'));
    const checkpoint = readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers;
    // In the file, features.0.1.running_var and features.1.1.weight were aliases of features.0.1.weight: each trained or updated apart.
    const values = (name: string): number[] => Array.from(checkpoint.get(name)?.data ?? []);
    expect(values('features.0.1.running_var')).to.have.length(4).and.not.deep.equal(values('features.0.1.weight'));
    expect(values('features.1.1.weight')).to.not.deep.equal(values('features.0.1.weight'));
    expect(values('neck.running_mean')).to.not.deep.equal(values('neck.bias'));
    const exported = await exportCheckpoint(out, { out: path.join(dir, 'aliased-export.onnx') });
    expect(exported.parity.maxAbsDiff).to.be.below(1e-5);
    const evaluated = await evaluate({ model: exported.out, data: data.dataset, trainClasses: data.trainClasses.split(','), clusterCounts: ['1x'], workers: 0 });
    const validation = result.history.at(-1)?.validation;
    expect(validation?.queryCount).to.equal(evaluated.runs[0]?.metrics.queryCount);
    expect(evaluated.runs[0]?.metrics.recall['1']).to.be.closeTo(validation?.recall['1'] as number, 1e-9);
    expect(evaluated.runs[0]?.metrics.mapAtR).to.be.closeTo(validation?.mapAtR as number, 1e-6);
  });

  it('runs each batch in micro-batches (microBatch): with frozen BatchNorm, the steps of the whole batches; with batch statistics, not', async () => {
    const frozen = {
      kind: 'onnx',
      path: fileURLToPath(new URL('../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url)),
      preprocessorConfig: false,
      output: '/block2/relu_1/Relu_output_0',
      head: { pooling: 'avg', embeddingDim: 8 },
      frozenBatchNorm: true,
    };
    const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image: { height: 16, width: 16, channels: 3 } };
    const run = async (name: string, model: Record<string, unknown>, microBatch?: number): Promise<Map<string, Float32Array>> => {
      const out = path.join(dir, name);
      const overrides = { backend: 'onnx', device: 'cpu', model, data, optimizer: { kind: 'momentum', learningRate: 0.01 }, ...(microBatch !== undefined ? { microBatch } : {}) };
      const result = await train(parseTrainConfig(tinyTrainConfig(out, overrides), 'spec'));
      expect(result.config['microBatch']).to.equal(microBatch);
      return new Map([...readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers].map(([k, v]) => [k, v.data as Float32Array]));
    };
    /** The largest relative difference of a tensor of `b` from the same tensor of `a`, by name. */
    const differences = (a: Map<string, Float32Array>, b: Map<string, Float32Array>): Map<string, number> =>
      new Map([...a].map(([name, values]) => [name, Math.max(...Array.from(values, (v, i) => Math.abs(v - ((b.get(name) as Float32Array)[i] as number)))) / Math.max(1e-3, ...Array.from(values, Math.abs))]));
    const whole = await run('whole-batches', frozen);
    const split = await run('micro-batches', frozen, 8); // batches of 30: micro-batches of 8, 8, 8 and 6
    const initial = readOnnxGraph(new Uint8Array(readFileSync(frozen.path)), 'initial').initializers.get('stem.0.weight')?.data as Float32Array;
    expect(Array.from(whole.get('stem.0.weight') as Float32Array)).to.not.deep.equal(Array.from(initial));
    for (const [name, difference] of differences(whole, split)) expect(difference, name).to.be.below(1e-4);
    // Batch statistics of 8 items are not those of 30: the micro-batches really ran.
    const batchStatistics = { ...frozen, frozenBatchNorm: false };
    const wholeStatistics = differences(await run('whole-batches-bn', batchStatistics), await run('micro-batches-bn', batchStatistics, 8));
    expect(Math.max(...wholeStatistics.values())).to.be.above(1e-3);
  });

  it("augments a fine-tuned network's training images (data.augmentation: RandomResizedCrop and flip), seeded", async () => {
    const model = { kind: 'onnx', path: fileURLToPath(new URL('../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url)), preprocessorConfig: false, output: '/block2/relu_1/Relu_output_0', head: { embeddingDim: 8 } };
    const image = { height: 16, width: 16, channels: 3 };
    const run = async (name: string, augmentation?: Record<string, unknown>): Promise<number[]> => {
      const out = path.join(dir, name);
      const data = { dataset: 'folder:data/default', trainClasses: 'bag,coat,dress,pullover,sandal', image, ...(augmentation ? { augmentation } : {}) };
      await train(parseTrainConfig(tinyTrainConfig(out, { backend: 'onnx', device: 'cpu', model, data }), 'spec'));
      return Array.from(readOnnxGraph(new Uint8Array(readFileSync(path.join(out, 'checkpoints', 'last', 'model.onnx'))), out).initializers.get('stem.0.weight')?.data ?? []);
    };
    const augmentation = { scale: [0.3, 1], ratio: [0.75, 1.3333], flipProbability: 0.5 };
    const augmented = await run('augmented', augmentation);
    expect(await run('augmented-again', augmentation)).to.deep.equal(augmented);
    expect(await run('plain')).to.not.deep.equal(augmented);
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
