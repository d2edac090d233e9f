import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { buildModel } from '../../../lib/train/models/build-model.js';
import { L2Normalize } from '../../../lib/train/models/l2-normalize.js';
import type { ModelSpec } from '../../../lib/train/models/model-spec.js';
import { layersModelFromArtifacts, modelArtifacts } from '../../../lib/train/models/tfjs-files.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

/** Row norms of a [B, D] tensor. */
function rowNorms(t: tf.Tensor): number[] {
  const [b, d] = t.shape as [number, number];
  const v = t.dataSync();
  return Array.from({ length: b }, (_, r) => Math.hypot(...Array.from(v.subarray(r * d, (r + 1) * d))));
}

function weightsOf(model: tf.LayersModel): Array<{ name: string; values: Float32Array }> {
  return model.weights.map((w) => ({ name: w.originalName, values: w.read().dataSync() as Float32Array }));
}

describe('train/models', () => {
  before(async () => {
    await tf.setBackend('cpu');
  });

  it('mlp: a linear head ends in L2Normalize and gives unit rows of embeddingDim', async () => {
    const model = await buildModel({ kind: 'mlp', inputDim: 6, hidden: [], embeddingDim: 4 }, 5);
    expect(model.layers.map((l) => l.getClassName())).to.deep.equal(['InputLayer', 'Dense', 'L2Normalize']);
    const y = model.predict(tf.randomNormal([3, 6], 0, 1, 'float32', 1)) as tf.Tensor;
    expect(y.shape).to.deep.equal([3, 4]);
    for (const n of rowNorms(y)) expect(n).to.be.closeTo(1, 1e-6);
    model.dispose();
  });

  it('mlp: hidden layers with batch norm, in the documented order and names', async () => {
    const model = await buildModel({ kind: 'mlp', inputDim: 6, hidden: [5, 3], embeddingDim: 2, activation: 'tanh', batchNorm: true }, 5);
    expect(model.layers.map((l) => l.name)).to.deep.equal([
      'features',
      'head_dense_1',
      'head_bn_1',
      'head_act_1',
      'head_dense_2',
      'head_bn_2',
      'head_act_2',
      'head_embedding',
      'head_l2norm',
    ]);
    expect(model.getLayer('head_dense_1').getConfig()).to.deep.include({ useBias: false });
    const y = model.apply(tf.randomNormal([4, 6], 0, 1, 'float32', 2), { training: true }) as tf.Tensor;
    expect(y.shape).to.deep.equal([4, 2]);
    for (const n of rowNorms(y)) expect(n).to.be.closeTo(1, 1e-6);
    model.dispose();
  });

  it('cnn: conv 32 -> pool -> conv 64 -> pool -> dense 128 -> embedding by default; tiny variant gives unit rows', async () => {
    const fmnist = await buildModel({ kind: 'cnn', inputShape: [28, 28, 1], embeddingDim: 64 }, 1);
    expect(fmnist.layers.map((l) => `${l.getClassName()}:${l.name}`)).to.deep.equal([
      'InputLayer:image',
      'Conv2D:conv_1',
      'Activation:conv_act_1',
      'MaxPooling2D:pool_1',
      'Conv2D:conv_2',
      'Activation:conv_act_2',
      'MaxPooling2D:pool_2',
      'Flatten:flatten',
      'Dense:head_dense_1',
      'Activation:head_act_1',
      'Dense:head_embedding',
      'L2Normalize:head_l2norm',
    ]);
    expect(fmnist.getLayer('flatten').outputShape).to.deep.equal([null, 3136]);
    expect(fmnist.outputs[0]?.shape).to.deep.equal([null, 64]);
    fmnist.dispose();

    const tiny = await buildModel({ kind: 'cnn', inputShape: [8, 8, 2], filters: [3, 4], hidden: [6], embeddingDim: 5, batchNorm: true }, 1);
    const y = tiny.predict(tf.randomNormal([2, 8, 8, 2], 0, 1, 'float32', 4)) as tf.Tensor;
    expect(y.shape).to.deep.equal([2, 5]);
    for (const n of rowNorms(y)) expect(n).to.be.closeTo(1, 1e-6);
    tiny.dispose();
  });

  it('convnet, downsample stride and pooling avg: 4 stride-2 stages 32-64-128-256 + GAP (406,304 parameters on 64x64x3); depth 2, hidden layers, odd sizes', async () => {
    const strided = { downsample: 'stride', pooling: 'avg' } as const;
    const standard = await buildModel({ kind: 'convnet', inputShape: [64, 64, 3], embeddingDim: 64, ...strided }, 1);
    const stage = (i: number, h: number, c: number): string[] => [
      `Conv2D:stage${i}_conv1:${h}x${h}x${c}`,
      `BatchNormalization:stage${i}_bn1:${h}x${h}x${c}`,
      `Activation:stage${i}_act1:${h}x${h}x${c}`,
    ];
    expect(standard.layers.map((l) => `${l.getClassName()}:${l.name}:${(l.outputShape as number[]).slice(1).join('x')}`)).to.deep.equal([
      'InputLayer:image:64x64x3',
      ...stage(1, 32, 32),
      ...stage(2, 16, 64),
      ...stage(3, 8, 128),
      ...stage(4, 4, 256),
      'GlobalAveragePooling2D:gap:256',
      'Dense:head_embedding:64',
      'L2Normalize:head_l2norm:64',
    ]);
    for (let i = 1; i <= 4; i++) {
      expect(standard.getLayer(`stage${i}_conv1`).getConfig(), `stage${i}_conv1`).to.deep.include({ kernelSize: [3, 3], strides: [2, 2], padding: 'same', useBias: false });
      expect(standard.getLayer(`stage${i}_act1`).getConfig()).to.deep.include({ activation: 'relu' });
      // PyTorch's BatchNorm2d defaults (momentum 0.1 = Keras 0.9, epsilon 1e-5), not Keras's 0.99 / 1e-3.
      expect(standard.getLayer(`stage${i}_bn1`).getConfig()).to.deep.include({ axis: -1, momentum: 0.9, epsilon: 1e-5, center: true, scale: true });
    }
    // Kernels 3*3*(3*32 + 32*64 + 64*128 + 128*256) = 387,936; batch norm 4 x (32+64+128+256) = 1,920
    // (half of it the non-trainable moving statistics); embedding 256*64 + 64 = 16,448.
    expect(standard.countParams()).to.equal(387936 + 1920 + 16448);
    expect(standard.nonTrainableWeights.reduce((n, w) => n + (w.shape as number[]).reduce((a, b) => a * b, 1), 0)).to.equal(960);
    standard.dispose();

    // 28x28 (Fashion-MNIST) with three stages: 28 -> 14 -> 7 -> 4 ('same' rounds up); depth 2 adds a
    // stride-1 block per stage; hidden head layers take the activation.
    const deep = await buildModel({ kind: 'convnet', inputShape: [28, 28, 1], widths: [4, 6, 8], depth: 2, hidden: [5], embeddingDim: 3, activation: 'elu', ...strided }, 1);
    expect(deep.layers.filter((l) => l.getClassName() === 'Conv2D').map((l) => `${l.name}:${(l.getConfig()['strides'] as number[]).join('')}:${(l.outputShape as number[]).slice(1).join('x')}`)).to.deep.equal([
      'stage1_conv1:22:14x14x4',
      'stage1_conv2:11:14x14x4',
      'stage2_conv1:22:7x7x6',
      'stage2_conv2:11:7x7x6',
      'stage3_conv1:22:4x4x8',
      'stage3_conv2:11:4x4x8',
    ]);
    expect(deep.layers.slice(-5).map((l) => l.name)).to.deep.equal(['gap', 'head_dense_1', 'head_act_1', 'head_embedding', 'head_l2norm']);
    expect(deep.getLayer('stage3_act2').getConfig()).to.deep.include({ activation: 'elu' });
    // 9*(1*4 + 4*4 + 4*6 + 6*6 + 6*8 + 8*8) = 1,728 kernel weights; 4 x 2 x (4+6+8) = 144 batch norm;
    // head 8*5 + 5 = 45 and 5*3 + 3 = 18.
    expect(deep.countParams()).to.equal(1728 + 144 + 45 + 18);
    const y = deep.apply(tf.randomNormal([4, 28, 28, 1], 0, 1, 'float32', 4), { training: true }) as tf.Tensor;
    expect(y.shape).to.deep.equal([4, 3]);
    for (const n of rowNorms(y)) expect(n).to.be.closeTo(1, 1e-6);
    deep.dispose();

    // poolBatchNorm: batch norm of the pooled features (2 x 8 trainable + 2 x 8 moving statistics),
    // which centres them: an untrained embedding's similarities start near 0 instead of near 1.
    const centred = await buildModel({ kind: 'convnet', inputShape: [16, 16, 1], widths: [4, 8], poolBatchNorm: true, embeddingDim: 6, ...strided }, 2);
    const plain = await buildModel({ kind: 'convnet', inputShape: [16, 16, 1], widths: [4, 8], embeddingDim: 6, ...strided }, 2);
    expect(centred.layers.slice(-4).map((l) => `${l.getClassName()}:${l.name}`)).to.deep.equal(['GlobalAveragePooling2D:gap', 'BatchNormalization:gap_bn', 'Dense:head_embedding', 'L2Normalize:head_l2norm']);
    expect(centred.getLayer('gap_bn').getConfig()).to.deep.include({ momentum: 0.9, epsilon: 1e-5 });
    expect(centred.countParams() - plain.countParams()).to.equal(4 * 8);
    const images = tf.randomUniform([64, 16, 16, 1], 0, 1, 'float32', 3);
    const meanCosine = (model: tf.LayersModel): number => {
      const e = model.apply(images, { training: true }) as tf.Tensor2D;
      const s = tf.matMul(e, e, false, true);
      return (tf.sum(s).dataSync()[0] as number - 64) / (64 * 63);
    };
    expect(meanCosine(plain)).to.be.greaterThan(0.5);
    expect(Math.abs(meanCosine(centred))).to.be.below(0.1);
    centred.dispose();
    plain.dispose();

    // The smallest input for two stages is 4x4; a 5x7 input gives 3x4 then 2x2.
    const small = await buildModel({ kind: 'convnet', inputShape: [5, 7, 2], widths: [3, 2], embeddingDim: 2, ...strided }, 1);
    expect(small.getLayer('stage2_conv1').outputShape).to.deep.equal([null, 2, 2, 2]);
    small.dispose();
  });

  it('convnet defaults (downsample maxpool, pooling avgmax): Recipe R at 64x64x3 is PyTorch\'s network, layer for layer and parameter for parameter', async () => {
    // Recipe R: conv_bn(3->32, stride 2), conv_bn(32->32), MaxPool 2, conv_bn(32->64), conv_bn(64->64), MaxPool 2,
    // conv_bn(64->128), conv_bn(128->128); [global average, global max] (256) -> BatchNorm1d -> Linear(256 -> 128) -> L2.
    const recipe = await buildModel({ kind: 'convnet', inputShape: [64, 64, 3], widths: [32, 64, 128], depth: 2, poolBatchNorm: true, embeddingDim: 128 }, 1);
    const block = (i: number, j: number, h: number, c: number): string[] => [
      `Conv2D:stage${i}_conv${j}:${h}x${h}x${c}`,
      `BatchNormalization:stage${i}_bn${j}:${h}x${h}x${c}`,
      `Activation:stage${i}_act${j}:${h}x${h}x${c}`,
    ];
    expect(recipe.layers.map((l) => `${l.getClassName()}:${l.name}:${(l.outputShape as number[]).slice(1).join('x')}`)).to.deep.equal([
      'InputLayer:image:64x64x3',
      ...block(1, 1, 32, 32),
      ...block(1, 2, 32, 32),
      'MaxPooling2D:stage2_pool:16x16x32',
      ...block(2, 1, 16, 64),
      ...block(2, 2, 16, 64),
      'MaxPooling2D:stage3_pool:8x8x64',
      ...block(3, 1, 8, 128),
      ...block(3, 2, 8, 128),
      'GlobalAveragePooling2D:gap:128',
      'GlobalMaxPooling2D:gmp:128',
      'Concatenate:pool:256',
      'BatchNormalization:gap_bn:256',
      'Dense:head_embedding:128',
      'L2Normalize:head_l2norm:128',
    ]);
    expect(recipe.layers.filter((l) => l.getClassName() === 'Conv2D').map((l) => (l.getConfig()['strides'] as number[]).join(''))).to.deep.equal(['22', '11', '11', '11', '11', '11']);
    expect(recipe.getLayer('stage2_pool').getConfig()).to.deep.include({ poolSize: [2, 2], strides: [2, 2], padding: 'valid' });
    // PyTorch's trainable parameters: convolutions 9 x (3*32 + 32*32 + 32*64 + 64*64 + 64*128 + 128*128) = 286,560,
    // BatchNorm2d 2 x 448 = 896, BatchNorm1d 2 x 256 = 512, Linear 256*128 + 128 = 32,896: 320,864; tfjs also
    // counts the running means and variances (2 x 448 + 2 x 256).
    const trainable = recipe.trainableWeights.reduce((n, w) => n + (w.shape as number[]).reduce((a, b) => a * b, 1), 0);
    expect(trainable).to.equal(286560 + 896 + 512 + 32896);
    expect(recipe.countParams()).to.equal(trainable + 896 + 512);
    // The pooled features are the average then the maximum of the last map, per channel.
    const x = tf.randomNormal([2, 64, 64, 3], 0, 1, 'float32', 5);
    const probe = tf.model({ inputs: recipe.inputs, outputs: [recipe.getLayer('stage3_act2').output as tf.SymbolicTensor, recipe.getLayer('pool').output as tf.SymbolicTensor] });
    const [map, pooled] = probe.predict(x) as [tf.Tensor4D, tf.Tensor2D];
    const expected = tf.concat([tf.mean(map, [1, 2]), tf.max(map, [1, 2])], 1);
    expect(Array.from(pooled.dataSync())).to.deep.equal(Array.from(expected.dataSync()));
    tf.dispose([x, map, pooled, expected]);
    recipe.dispose();

    // pooling max alone, and maxpool downsampling rounding down on odd sizes (PyTorch's MaxPool2d(2)): 13 -> 7 -> 3 -> 1.
    const odd = await buildModel({ kind: 'convnet', inputShape: [13, 13, 1], widths: [2, 3, 4], pooling: 'max', embeddingDim: 2 }, 1);
    expect(odd.layers.filter((l) => /pool|gmp|gap/.test(l.name)).map((l) => `${l.name}:${(l.outputShape as number[]).slice(1).join('x')}`)).to.deep.equal(['stage2_pool:3x3x2', 'stage3_pool:1x1x3', 'gmp:4']);
    odd.dispose();
  });

  it('the same seed gives bit-identical initial weights; another seed does not', async () => {
    const specs: ModelSpec[] = [
      { kind: 'mlp', inputDim: 5, hidden: [4], embeddingDim: 3 },
      { kind: 'cnn', inputShape: [4, 4, 1], filters: [2], hidden: [3], embeddingDim: 2 },
      { kind: 'convnet', inputShape: [8, 8, 1], widths: [2, 2], depth: 2, hidden: [3], embeddingDim: 2 },
    ];
    for (const spec of specs) {
      const [a, b, c] = await Promise.all([buildModel(spec, 9), buildModel(spec, 9), buildModel(spec, 10)]);
      const wa = weightsOf(a as tf.LayersModel);
      expect(wa.map((w) => w.name)).to.deep.equal(weightsOf(b as tf.LayersModel).map((w) => w.name));
      expect(wa).to.deep.equal(weightsOf(b as tf.LayersModel));
      expect(wa).not.to.deep.equal(weightsOf(c as tf.LayersModel));
      // Every layer draws its own seed: two equally shaped kernels differ.
      expect(wa.filter((w) => w.name.endsWith('kernel')).every((w) => w.values.some((v) => v !== 0))).to.equal(true);
      for (const m of [a, b, c]) m?.dispose();
    }
  });

  it('L2Normalize maps a zero row to zeros (no NaN), serialises its epsilon and reloads with the same outputs', async () => {
    const layer = new L2Normalize({ epsilon: 1e-6 });
    const out = layer.apply(tf.tensor2d([[0, 0], [3, 4]])) as tf.Tensor;
    const values = Array.from(out.dataSync());
    expect(values[0]).to.equal(0);
    expect(values[1]).to.equal(0);
    expect(values[2]).to.be.closeTo(0.6, 1e-6);
    expect(values[3]).to.be.closeTo(0.8, 1e-6);
    expect(layer.getConfig()).to.deep.include({ epsilon: 1e-6 });

    const model = await buildModel({ kind: 'mlp', inputDim: 3, hidden: [4], embeddingDim: 2 }, 3);
    const artifacts = await modelArtifacts(model);
    const topology = JSON.stringify(artifacts.modelTopology);
    expect(topology).to.include('"class_name":"L2Normalize"');
    expect(topology).to.include('"epsilon":1e-12');
    const reloaded = await layersModelFromArtifacts(artifacts, 'in-memory');
    expect(reloaded.getLayer('head_l2norm')).to.be.instanceOf(L2Normalize);
    const x = tf.randomNormal([5, 3], 0, 1, 'float32', 8);
    expect(Array.from((reloaded.predict(x) as tf.Tensor).dataSync())).to.deep.equal(Array.from((model.predict(x) as tf.Tensor).dataSync()));
    model.dispose();
    reloaded.dispose();
  });

  it('names bad spec fields', async () => {
    const cases: Array<[unknown, string]> = [
      [{ kind: 'rnn' }, 'Expected one of mlp, cnn, convnet, tfjs-backbone, onnx for model.kind but received "rnn"'],
      [{ kind: 'mlp', inputDim: 0, hidden: [], embeddingDim: 2 }, 'Expected a number > 0 for model.inputDim but received 0'],
      [{ kind: 'mlp', inputDim: 3, hidden: [4, 0], embeddingDim: 2 }, 'Expected a number > 0 for model.hidden[1] but received 0'],
      [{ kind: 'mlp', inputDim: 3, hidden: [], embeddingDim: 2, activation: 'gelu' }, 'Expected one of relu, elu, tanh, sigmoid for model.activation but received "gelu"'],
      [{ kind: 'cnn', inputShape: [4, 4], embeddingDim: 2 }, 'Expected an array of at least 3 item(s) for model.inputShape but received array of length 2'],
      [{ kind: 'cnn', inputShape: [3, 3, 1], embeddingDim: 2 }, 'Expected height and width of at least 4 for 2 2x2 poolings for model.inputShape but received "[3, 3, 1]"'],
      [{ kind: 'convnet', inputShape: [64, 64], embeddingDim: 2 }, 'Expected an array of at least 3 item(s) for model.inputShape but received array of length 2'],
      [{ kind: 'convnet', inputShape: [64, 0, 3], embeddingDim: 2 }, 'Expected a number > 0 for model.inputShape[1] but received 0'],
      [{ kind: 'convnet', inputShape: [15, 64, 3], embeddingDim: 2 }, 'Expected height and width of at least 16 for 4 stages that each halve them for model.inputShape but received "[15, 64, 3]"'],
      [{ kind: 'convnet', inputShape: [28, 28, 1], widths: [8, 8, 8, 8, 8], embeddingDim: 2 }, 'Expected height and width of at least 32 for 5 stages that each halve them for model.inputShape but received "[28, 28, 1]"'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], widths: [], embeddingDim: 2 }, 'Expected an array of at least 1 item(s) for model.widths but received array of length 0'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], widths: [8, 2.5], embeddingDim: 2 }, 'Expected an integer for model.widths[1] but received 2.5'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], widths: 16, embeddingDim: 2 }, 'Expected an array for model.widths but received 16'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], depth: 0, embeddingDim: 2 }, 'Expected a number > 0 for model.depth but received 0'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], downsample: 'avgpool', embeddingDim: 2 }, 'Expected one of stride, maxpool for model.downsample but received "avgpool"'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], pooling: 'sum', embeddingDim: 2 }, 'Expected one of avg, max, avgmax for model.pooling but received "sum"'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], hidden: [-1], embeddingDim: 2 }, 'Expected a number > 0 for model.hidden[0] but received -1'],
      [{ kind: 'convnet', inputShape: [32, 32, 3], activation: 'gelu', embeddingDim: 2 }, 'Expected one of relu, elu, tanh, sigmoid for model.activation but received "gelu"'],
      [{ kind: 'convnet', inputShape: [32, 32, 3] }, 'Expected a number for model.embeddingDim but received undefined'],
      [{ kind: 'tfjs-backbone', modelJson: '', embeddingDim: 2 }, 'Expected a non-empty string for model.modelJson but received ""'],
      [{ kind: 'mlp', inputDim: 3, embeddingDim: 2, dropout: 0.5 }, 'Expected no unknown option (known: kind, inputDim, hidden, embeddingDim, activation, batchNorm) for model.dropout but received 0.5'],
    ];
    for (const [spec, message] of cases) await expectDmlError(() => buildModel(spec as ModelSpec, 0), 'E_ARG', message);
    await expectDmlError(() => buildModel({ kind: 'mlp', inputDim: 3, hidden: [], embeddingDim: 2 }, 2 ** 32), 'E_ARG', 'Expected an integer in [0, 2^32) for seed but received 4294967296');
  });
});
