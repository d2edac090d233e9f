import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../../lib/engine/tfjs/backend.js';
import { inputConv2d } from '../../../lib/train/models/input-conv2d.js';
import { Rng } from '../../../lib/util/rng.js';
import { random, relativeDifference } from '../../helpers/compare-backends.js';
import { restoreBackendAfter } from '../../helpers/tf-backend.js';

/**
 * The first convolution of the model builders (lib/train/models/input-conv2d.ts): in training, with and without
 * bias, it computes what the stock Conv2D computes, outputs and weight gradients (bias included),
 * without the input gradient (one Conv2DBackpropInput fewer per step); it stays a `Conv2D` for
 * serialisation.
 */
describe('train/models: the input convolution', function () {
  this.timeout(60_000);
  restoreBackendAfter();

  /** image -> conv (input layer, `first`, bias as given) -> relu -> conv with bias -> GAP. */
  function model(first: typeof tf.layers.conv2d | typeof inputConv2d, useBias = false): tf.LayersModel {
    const input = tf.input({ shape: [9, 8, 2] });
    const c1 = { name: 'c1', filters: 4, kernelSize: 3, strides: 2, padding: 'same' as const, useBias, kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }), biasInitializer: tf.initializers.constant({ value: 0.1 }) };
    let x = first(c1).apply(input) as tf.SymbolicTensor;
    x = tf.layers.activation({ activation: 'relu' }).apply(x) as tf.SymbolicTensor;
    x = tf.layers.conv2d({ name: 'c2', filters: 3, kernelSize: 3, padding: 'valid', kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }).apply(x) as tf.SymbolicTensor;
    return tf.model({ inputs: input, outputs: tf.layers.globalAveragePooling2d({}).apply(x) as tf.SymbolicTensor });
  }

  for (const [backend, useBias] of [
    ['cpu', false],
    ['cpu', true],
    ['ort-cpu', false],
    ['ort-cpu', true],
  ] as const) {
    it(`on ${backend}, ${useBias ? 'with' : 'without'} bias: training outputs and weight gradients equal the stock Conv2D's, with one Conv2DBackpropInput fewer`, async () => {
      await selectBackend(backend);
      const images = random(new Rng(4), [3, 9, 8, 2]);
      const run = async (m: tf.LayersModel): Promise<{ values: Float32Array[]; kernels: string[] }> => {
        const weights = m.trainableWeights.map((w) => w.read() as tf.Variable);
        const loss = (): tf.Scalar => tf.sum(tf.square(m.apply(images, { training: true }) as tf.Tensor));
        const profile = await tf.profile(() => tf.dispose(tf.variableGrads(loss, weights)));
        const { value, grads } = tf.variableGrads(loss, weights);
        const values = [value, ...weights.map((w) => grads[w.name] as tf.Tensor), m.apply(images, { training: false }) as tf.Tensor].map((t) => Float32Array.from(t.dataSync()));
        return { values, kernels: profile.kernels.map((k) => k.name) };
      };
      const stock = await run(model(tf.layers.conv2d, useBias));
      const ours = await run(model(inputConv2d, useBias));
      stock.values.forEach((v, k) => expect(relativeDifference(v, ours.values[k] as Float32Array), `output ${k}`).to.be.at.most(1e-6));
      const count = (kernels: string[]): number => kernels.filter((k) => k === 'Conv2DBackpropInput').length;
      expect(count(stock.kernels)).to.equal(2);
      expect(count(ours.kernels)).to.equal(1);
      expect(ours.values.length, 'loss, c1 kernel (and bias), c2 kernel and bias, inference output').to.equal(useBias ? 6 : 5);
    });
  }

  it('stays a Conv2D for serialisation: model.json reloads with the stock layer and the same inference', async () => {
    await selectBackend('cpu');
    const m = model(inputConv2d);
    expect(m.getLayer('c1').getClassName()).to.equal('Conv2D');
    let saved: tf.io.ModelArtifacts | undefined;
    await m.save(tf.io.withSaveHandler(async (artifacts) => ((saved = artifacts), { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } })));
    const reloaded = await tf.loadLayersModel(tf.io.fromMemory(saved as tf.io.ModelArtifacts));
    const x = random(new Rng(5), [2, 9, 8, 2]);
    expect(Array.from((reloaded.predict(x) as tf.Tensor).dataSync())).to.deep.equal(Array.from((m.predict(x) as tf.Tensor).dataSync()));
  });
});
