/**
 * @file Tests of the training config schema on its own (no training): the defaults it fills in, the
 * one-line E_ARG error naming the file and the first bad field, strictness, and the cluster counts
 * sharing dml eval's spec.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { DEVICE_CHOICES } from '../../lib/onnx/devices.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { didYouMean, editDistance } from '../../lib/util/did-you-mean.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

const minimal: TrainConfigInput = {
  data: { dataset: 'folder:data/default' },
  model: { kind: 'mlp', inputDim: 784, embeddingDim: 4 },
  loss: { name: 'ephn' },
  sampler: { groupSize: 4, batchSize: 16 },
  optimizer: { learningRate: 0.01 },
  epochs: 2,
  out: 'runs/x',
};

describe('train/config', () => {
  it('reports every bad value in one line, with "did you mean" for misspelt keys at any depth', async () => {
    const { optimizer, ...rest } = minimal;
    const bad = { ...rest, optimiser: optimizer, epochs: 0, sampler: { ...minimal.sampler, batchSise: 16 }, validation: { evrey: 2, zzzzzz: 1 } } as unknown as TrainConfigInput;
    await expectDmlError(
      () => parseTrainConfig(bad, 'a.json'),
      'E_ARG',
      'a.json: 5 problems: sampler: unknown key "batchSise" (did you mean "batchSize"?); optimizer: Invalid input: expected object, received undefined; epochs: Too small: expected number to be >0; validation: unknown keys "evrey" (did you mean "every"?), "zzzzzz"; (top level): unknown key "optimiser" (did you mean "optimizer"?)',
    );
    expect(didYouMean('optimiser', ['optimizer', 'out'])).to.equal('optimizer');
    expect(didYouMean('xyz', ['optimizer', 'out'])).to.equal(undefined);
    expect(editDistance('kitten', 'sitting')).to.equal(3);
    expect(editDistance('evrey', 'every')).to.equal(1);
  });

  it('takes the execution devices of the one registry (lib/onnx/devices.ts) for the graph trainer and the features backbone', () => {
    for (const device of DEVICE_CHOICES) {
      expect(parseTrainConfig({ ...minimal, backend: 'onnx', device }, 'train.json').device).to.equal(device);
      const features = { ...minimal, data: { ...minimal.data, features: { backbone: 'models/default.onnx', device } } };
      expect(parseTrainConfig(features, 'train.json').data.features?.device).to.equal(device);
    }
    expect(() => parseTrainConfig({ ...minimal, backend: 'onnx', device: 'tpu' } as unknown as TrainConfigInput, 'train.json')).to.throw(/device: Invalid option: expected one of "auto"\|"cuda"\|"webgpu"\|"cpu"/);
  });

  it('takes microBatch and model.preprocessorConfig on the onnx backend; data.image may be partial or absent', async () => {
    const onnx = { ...minimal, backend: 'onnx', model: { kind: 'onnx', path: 'backbone.onnx', preprocessorConfig: false, head: { embeddingDim: 8 } } } as const;
    const config = parseTrainConfig({ ...onnx, microBatch: 8, data: { ...minimal.data, image: { mean: [0.5, 0.5, 0.5], resample: 'bicubic' } } }, 'train.json');
    expect([config.microBatch, config.data.image]).to.deep.equal([8, { mean: [0.5, 0.5, 0.5], resample: 'bicubic' }]);
    expect(parseTrainConfig(onnx, 'train.json').data.image).to.equal(undefined);
    // With backend auto, microBatch (like device and model.kind onnx) chooses the graph trainer (lib/train/training-engine.ts).
    expect(parseTrainConfig({ ...minimal, microBatch: 8 }, 'train.json').microBatch).to.equal(8);
    await expectDmlError(() => parseTrainConfig({ ...minimal, backend: 'ort-cpu', microBatch: 8 }, 'train.json'), 'E_ARG', "train.json: microBatch: splits the onnx backend's batches; with backend ort-cpu remove it (got 8)");
    await expectDmlError(() => parseTrainConfig({ ...onnx, microBatch: 0 }, 'train.json'), 'E_ARG', 'train.json: microBatch: Too small: expected number to be >0');
    await expectDmlError(() => parseTrainConfig({ ...minimal, data: { ...minimal.data, image: { height: 8, resample: 'cubic' } } } as unknown as TrainConfigInput, 'train.json'), 'E_ARG', /data\.image\.resample: Invalid option: expected one of "nearest"\|"bilinear"\|"bicubic"\|"lanczos"/);
  });

  it('fills the documented defaults', () => {
    const config = parseTrainConfig(minimal, 'train.json');
    expect(config.seed).to.equal(0);
    expect(config.backend).to.equal('auto');
    expect(config.validation).to.deep.equal({ every: 1, maxItems: 5000, ks: [1, 2, 4, 8], clusterCounts: ['1x'] });
    expect(config.scatter).to.deep.equal({ every: 1, set: 'validation', maxPoints: 2000 });
    expect(config.optimizer).to.include({ kind: 'adam', weightDecay: 0 });
    expect(config.sampler).to.include({ kind: 'exact', repeat: 1, dropLast: false });
    expect(config.model).to.deep.include({ kind: 'mlp', hidden: [], activation: 'relu', batchNorm: false });
  });

  it('convnet: fills widths [32, 64, 128, 256], depth 1, hidden [], relu; rejects an empty widths and fields of other kinds', async () => {
    const config = parseTrainConfig({ ...minimal, model: { kind: 'convnet', inputShape: [64, 64, 3], embeddingDim: 8 } }, 'train.json');
    expect(config.model).to.deep.equal({ kind: 'convnet', inputShape: [64, 64, 3], embeddingDim: 8, widths: [32, 64, 128, 256], depth: 1, downsample: 'maxpool', pooling: 'avgmax', hidden: [], activation: 'relu', poolBatchNorm: false });
    const model = (extra: Record<string, unknown>): TrainConfigInput => ({ ...minimal, model: { kind: 'convnet', inputShape: [32, 32, 3], embeddingDim: 8, ...extra } as TrainConfigInput['model'] });
    await expectDmlError(() => parseTrainConfig(model({ widths: [] }), 'a.json'), 'E_ARG', /^a\.json: model\.widths: /);
    await expectDmlError(() => parseTrainConfig(model({ depth: 0 }), 'a.json'), 'E_ARG', /^a\.json: model\.depth: /);
    await expectDmlError(() => parseTrainConfig(model({ filters: [8] }), 'a.json'), 'E_ARG', /^a\.json: model: .*filters/);
    await expectDmlError(() => parseTrainConfig(model({ batchNorm: false }), 'a.json'), 'E_ARG', /^a\.json: model: .*batchNorm/);
  });

  it('the example configs in scripts/configs are valid; fashion-mnist-convnet.json is the 3-stage convnet with 2nd-order EPHN, -pool-bn.json the same with poolBatchNorm', () => {
    const dir = 'scripts/configs';
    const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
    expect(files).to.include.members(['fashion-mnist-cnn.json', 'fashion-mnist-convnet.json', 'fashion-mnist-mlp.json']);
    for (const f of files) parseTrainConfig(JSON.parse(readFileSync(path.join(dir, f), 'utf8')), f);
    const convnet = parseTrainConfig(JSON.parse(readFileSync(path.join(dir, 'fashion-mnist-convnet.json'), 'utf8')), 'fashion-mnist-convnet.json');
    // Pinned to the variant docs/results.md's table measured with it (stride-2 stages, average pooling).
    expect(convnet.model).to.deep.equal({ kind: 'convnet', inputShape: [28, 28, 1], widths: [32, 64, 128], depth: 1, downsample: 'stride', pooling: 'avg', hidden: [], embeddingDim: 16, activation: 'relu', poolBatchNorm: false });
    expect(convnet.loss).to.deep.equal({ name: 'ephn', order: 2 });
    const pooled = parseTrainConfig(JSON.parse(readFileSync(path.join(dir, 'fashion-mnist-convnet-pool-bn.json'), 'utf8')), 'fashion-mnist-convnet-pool-bn.json');
    expect(pooled.model).to.deep.equal({ ...convnet.model, poolBatchNorm: true });
    expect({ ...pooled, model: convnet.model, out: convnet.out }).to.deep.equal(convnet);
  });

  it('keeps the loss options for the loss registry to check', () => {
    const config = parseTrainConfig({ ...minimal, loss: { name: 'ephn', temperature: 0.1 } }, 'train.json');
    expect(config.loss).to.deep.equal({ name: 'ephn', temperature: 0.1 });
  });

  it('accepts the cluster counts dml eval --cluster-counts accepts, and names a bad one', async () => {
    const config = parseTrainConfig({ ...minimal, validation: { clusterCounts: ['1x', '10x', '300'] } }, 'train.json');
    expect(config.validation.clusterCounts).to.deep.equal(['1x', '10x', '300']);
    await expectDmlError(
      () => parseTrainConfig({ ...minimal, validation: { clusterCounts: ['ten'] } }, 'train.json'),
      'E_ARG',
      /^train\.json: validation\.clusterCounts: .*validation\.clusterCounts.*"ten"/,
    );
  });

  it('one line naming the file and the first bad field: a wrong type, a missing field, an unknown field', async () => {
    await expectDmlError(() => parseTrainConfig({ ...minimal, epochs: 0 }, 'a.json'), 'E_ARG', /^a\.json: epochs: /);
    const { out: _out, ...withoutOut } = minimal;
    await expectDmlError(() => parseTrainConfig(withoutOut, 'a.json'), 'E_ARG', /^a\.json: out: /);
    await expectDmlError(() => parseTrainConfig({ ...minimal, epoch: 3 } as TrainConfigInput, 'a.json'), 'E_ARG', /^a\.json: \(top level\): .*epoch/);
    await expectDmlError(() => parseTrainConfig({ ...minimal, backend: 'gpu' } as unknown as TrainConfigInput, 'a.json'), 'E_ARG', /^a\.json: backend: /);
  });
});
