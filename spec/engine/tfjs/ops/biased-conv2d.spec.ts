import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../../../lib/engine/tfjs/backend.js';
import { biasedConv2d, useBiasedConv2dGradient } from '../../../../lib/engine/tfjs/ops/biased-conv2d.js';
import { Rng } from '../../../../lib/util/rng.js';
import { random, relativeDifference } from '../../../helpers/compare-backends.js';
import { restoreBackendAfter } from '../../../helpers/tf-backend.js';

/**
 * ops/biased-conv2d.ts: conv + bias as a FusedConv2D kernel with a registered gradient computes what
 * tf.fused.conv2d computes, value and every gradient (the input gradient too, when asked for), and
 * computes the input gradient only when it is asked for.
 */
describe('engine/tfjs/ops: biasedConv2d', function () {
  this.timeout(60_000);
  restoreBackendAfter();

  for (const backend of ['cpu', 'ort-cpu'] as const) {
    const geometries: Array<['same' | 'valid', [number, number]]> = [['same', [2, 2]], ['valid', [1, 2]]];
    for (const [pad, strides] of geometries) {
      it(`on ${backend}, ${pad} stride [${strides.join(', ')}]: value and gradients for x, filter and bias equal tf.fused.conv2d's`, async () => {
        await selectBackend(backend);
        const rng = new Rng(9);
        const x = random(rng, [2, 9, 8, 3]) as tf.Tensor4D;
        const w = random(rng, [3, 3, 3, 5]) as tf.Tensor4D;
        const b = random(rng, [5]) as tf.Tensor1D;
        const target = random(rng, [5]);
        const loss = (f: (x: tf.Tensor4D, w: tf.Tensor4D, b: tf.Tensor1D) => tf.Tensor) => (xs: tf.Tensor, ws: tf.Tensor, bs: tf.Tensor): tf.Scalar =>
          tf.sum(tf.mul(f(xs as tf.Tensor4D, ws as tf.Tensor4D, bs as tf.Tensor1D), target));
        const stock = tf.grads(loss((xi, wi, bi) => tf.fused.conv2d({ x: xi, filter: wi, bias: bi, strides, pad })))([x, w, b]);
        const ours = tf.grads(loss((xi, wi, bi) => biasedConv2d(xi, wi, bi, { strides, pad })))([x, w, b]);
        const value = [tf.fused.conv2d({ x, filter: w, bias: b, strides, pad }), biasedConv2d(x, w, b, { strides, pad })];
        expect(relativeDifference((value[0] as tf.Tensor).dataSync(), (value[1] as tf.Tensor).dataSync()), 'value').to.be.at.most(1e-6);
        stock.forEach((g, k) => expect(relativeDifference(g.dataSync(), (ours[k] as tf.Tensor).dataSync()), ['dx', 'dW', 'db'][k]).to.be.at.most(1e-6));
      });
    }
  }

  it('computes the input gradient only when it is asked for', async () => {
    await selectBackend('cpu');
    const rng = new Rng(10);
    const x = random(rng, [2, 6, 6, 2]) as tf.Tensor4D;
    const w = tf.variable(random(rng, [3, 3, 2, 4]));
    const b = tf.variable(random(rng, [4]));
    const profile = await tf.profile(() => tf.dispose(tf.variableGrads(() => tf.sum(biasedConv2d(x, w as tf.Variable<tf.Rank.R4>, b as tf.Variable<tf.Rank.R1>, { strides: [1, 1], pad: 'same' })), [w, b])));
    const names = profile.kernels.map((k) => k.name);
    expect(names).to.include('Conv2DBackpropFilter');
    expect(names).to.not.include('Conv2DBackpropInput');
    tf.dispose([w, b]);
  });

  it('names what its gradient covers when FusedConv2D is recorded with an activation', async () => {
    await selectBackend('cpu');
    useBiasedConv2dGradient();
    const rng = new Rng(11);
    const x = random(rng, [1, 4, 4, 1]);
    const w = random(rng, [3, 3, 1, 2]);
    const b = random(rng, [2]);
    const relu = (xs: tf.Tensor, ws: tf.Tensor, bs: tf.Tensor): tf.Tensor =>
      tf.sum(tf.engine().runKernel('FusedConv2D', { x: xs, filter: ws, bias: bs }, { strides: [1, 1], pad: 'same', dataFormat: 'NHWC', dilations: [1, 1], activation: 'relu', leakyreluAlpha: 0.2 }) as tf.Tensor);
    expect(() => tf.grads(relu)([x, w, b])).to.throw('covers NHWC, linear activation and dilation 1, got NHWC, relu, dilations 1,1');
  });
});
