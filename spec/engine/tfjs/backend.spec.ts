import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { ensureBackendSupports, missingKernels, modelKernels, selectBackend } from '../../../lib/engine/tfjs/backend.js';
import { buildModel } from '../../../lib/train/models/build-model.js';
import { loadNativeBinding } from '../../../lib/engine/tfjs/ort-cpu/ort-sync-runtime.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

type NativeBinding = ReturnType<typeof loadNativeBinding>;
type NativeSession = InstanceType<NativeBinding['binding']['InferenceSession']>;

/** onnxruntime's real binding with `run` replaced by `run(inner, ...args)` (to simulate broken bindings). */
function bindingWithRun(run: (inner: NativeSession, ...args: Parameters<NativeSession['run']>) => ReturnType<NativeSession['run']>): () => NativeBinding {
  const real = loadNativeBinding();
  return () => ({
    initOrt: real.initOrt,
    binding: {
      InferenceSession: class {
        readonly inner = new real.binding.InferenceSession();
        loadModel(...args: Parameters<NativeSession['loadModel']>): void {
          this.inner.loadModel(...args);
        }
        get inputMetadata() {
          return this.inner.inputMetadata;
        }
        get outputMetadata() {
          return this.inner.outputMetadata;
        }
        run(...args: Parameters<NativeSession['run']>) {
          return run(this.inner, ...args);
        }
        dispose(): void {
          this.inner.dispose();
        }
      },
    },
  });
}

describe('engine/tfjs/backend', () => {
  let before: string;
  beforeEach(async () => {
    await tf.ready();
    before = tf.getBackend();
  });
  afterEach(async () => {
    await tf.setBackend(before);
  });

  it('auto falls through tfjs-node-gpu and tfjs-node (not installable here) to ort-cpu, recording every attempt', async () => {
    const selected = await selectBackend('auto');
    expect(selected.name).to.equal('ort-cpu');
    expect(selected.tfBackend).to.equal('ort-cpu');
    expect(tf.getBackend()).to.equal('ort-cpu');
    expect(selected.attempts.map((a) => a.backend)).to.deep.equal(['tfjs-node-gpu', 'tfjs-node', 'ort-cpu']);
    expect(selected.attempts[0]?.error).to.equal('@tensorflow/tfjs-node-gpu is not installed');
    expect(selected.attempts[1]?.error).to.equal('@tensorflow/tfjs-node is not installed');
    expect(selected.attempts[2]).to.deep.equal({ backend: 'ort-cpu' });
  });

  it('a broken onnxruntime binding: forced ort-cpu falls back to cpu with one warning line, auto goes on to wasm', async () => {
    const broken = (): never => {
      throw new Error('simulated: binding symbol missing');
    };
    const forced = await selectBackend('ort-cpu', { ortBindingLoader: broken });
    expect(forced.name).to.equal('cpu');
    expect(tf.getBackend()).to.equal('cpu');
    expect(forced.warning).to.equal(
      'backend ort-cpu unavailable (onnxruntime-node 1.30.0: the synchronous native binding failed its self-test (simulated: binding symbol missing)); using the cpu backend instead (same results, slower)',
    );
    expect(forced.warning).not.to.include('\n');
    const auto = await selectBackend('auto', { ortBindingLoader: broken });
    expect(auto.name).to.equal('wasm');
    expect(auto.attempts.map((a) => a.backend)).to.deep.equal(['tfjs-node-gpu', 'tfjs-node', 'ort-cpu', 'wasm']);
  });

  it('a binding whose MatMul gives wrong numbers fails the self-test the same way', async () => {
    const wrong = bindingWithRun((inner, feeds, fetches, options) => {
      const out = inner.run(feeds, fetches, options);
      for (const t of Object.values(out)) (t.data as Float32Array)[0] = 42;
      return out;
    });
    const forced = await selectBackend('ort-cpu', { ortBindingLoader: wrong });
    expect(forced.name).to.equal('cpu');
    expect(forced.warning).to.match(/failed its self-test \(MatMul gave \[42, /);
  });

  it('a binding that does not write into pre-allocated outputs (how the kernels run) fails the self-test', async () => {
    // Lets onnxruntime allocate every output instead of writing into the given arrays.
    const ignoring = bindingWithRun((inner, feeds, fetches, options) => inner.run(feeds, Object.fromEntries(Object.keys(fetches).map((k) => [k, null])), options));
    const forced = await selectBackend('ort-cpu', { ortBindingLoader: ignoring });
    expect(forced.name).to.equal('cpu');
    expect(forced.warning).to.match(/failed its self-test \(MatMul into a pre-allocated output gave \[0, 0, 0, 0\]/);
  });

  it('forcing tfjs-node or tfjs-node-gpu fails with one clear line, and the backend stays as it was', async () => {
    await expectDmlError(selectBackend('tfjs-node'), 'E_ARG', "Cannot use TensorFlow.js backend 'tfjs-node' — tfjs-node: @tensorflow/tfjs-node is not installed");
    await expectDmlError(selectBackend('tfjs-node-gpu'), 'E_ARG', /^Cannot use TensorFlow.js backend 'tfjs-node-gpu' — tfjs-node-gpu: @tensorflow\/tfjs-node-gpu is not installed$/);
    expect(tf.getBackend()).to.equal(before);
  });

  it('forces wasm and cpu, and rejects an unknown preference', async () => {
    expect(await selectBackend('cpu')).to.deep.equal({ name: 'cpu', tfBackend: 'cpu', attempts: [{ backend: 'cpu' }] });
    expect(tf.getBackend()).to.equal('cpu');
    expect((await selectBackend('wasm')).attempts).to.deep.equal([{ backend: 'wasm' }]);
    await expectDmlError(
      selectBackend('gpu' as 'cpu'),
      'E_ARG',
      "Expected one of 'auto', 'tfjs-node-gpu', 'tfjs-node', 'ort-cpu', 'wasm', 'cpu' for backend but received \"gpu\"",
    );
  });

  it('knows which kernels wasm lacks', async () => {
    await selectBackend('wasm');
    expect(missingKernels(['Conv2D', 'Conv2DBackpropInput', 'Conv2DBackpropFilter', 'BatchMatMul'])).to.deep.equal(['Conv2DBackpropFilter']);
    expect(missingKernels(['Conv2DBackpropFilter'], 'cpu')).to.deep.equal([]);
    expect(missingKernels(['Conv2DBackpropFilter'], 'wasm')).to.deep.equal(['Conv2DBackpropFilter']);
  });

  it('switches a conv model to cpu with a warning when training is requested on wasm, and only then', async function () {
    this.timeout(20000);
    await selectBackend('wasm');
    const cnn = await buildModel({ kind: 'cnn', inputShape: [8, 8, 1], filters: [2], hidden: [], embeddingDim: 3 }, 1);
    const mlp = await buildModel({ kind: 'mlp', inputDim: 4, hidden: [3], embeddingDim: 2 }, 1);
    expect(modelKernels(cnn, true)).to.deep.equal(['Conv2D', 'Conv2DBackpropFilter', 'Conv2DBackpropInput', 'MaxPool', 'MaxPoolGrad']);
    expect(await ensureBackendSupports(mlp, { training: true })).to.deep.equal({ backend: 'wasm', missing: [] });
    expect(await ensureBackendSupports(cnn, { training: false })).to.deep.equal({ backend: 'wasm', missing: [] });

    // On wasm the gradient really fails, so the check is needed.
    const x = tf.randomNormal([2, 8, 8, 1], 0, 1, 'float32', 3);
    const loss = (): tf.Scalar => tf.sum(cnn.apply(x, { training: true }) as tf.Tensor).asScalar() as tf.Scalar;
    expect(() => tf.variableGrads(loss)).to.throw(/Conv2DBackpropFilter/);

    const check = await ensureBackendSupports(cnn, { training: true });
    expect(check).to.deep.equal({
      backend: 'cpu',
      switchedFrom: 'wasm',
      missing: ['Conv2DBackpropFilter'],
      warning: 'Training cnn_embedder needs Conv2DBackpropFilter, which the wasm backend lacks; using the cpu backend instead (slower)',
    });
    expect(tf.getBackend()).to.equal('cpu');
    const { value, grads } = tf.variableGrads(loss);
    expect(Number.isFinite(value.dataSync()[0])).to.equal(true);
    expect(Object.keys(grads)).to.have.length(4);
    tf.dispose([x, value, grads]);
    cnn.dispose();
    mlp.dispose();
  });

  it('a convnet needs only the convolution kernels beyond the common ones: batch norm and global average pooling train on every backend', async function () {
    this.timeout(20000);
    const convnet = await buildModel({ kind: 'convnet', inputShape: [8, 8, 2], widths: [3, 4], depth: 2, downsample: 'stride', pooling: 'avg', hidden: [], embeddingDim: 3 }, 1);
    expect(modelKernels(convnet, false)).to.deep.equal(['Conv2D']);
    expect(modelKernels(convnet, true)).to.deep.equal(['Conv2D', 'Conv2DBackpropFilter', 'Conv2DBackpropInput']);
    // Every kernel a training step really runs (batch-norm moments and gradient, the Mean of the pooling
    // and its gradient included) exists on cpu and ort-cpu; wasm lacks only the filter gradient, which
    // modelKernels already lists, so ensureBackendSupports moves the work to cpu.
    await selectBackend('ort-cpu');
    await selectBackend('wasm'); // both registered, for missingKernels below
    await selectBackend('cpu');
    const x = tf.randomNormal([4, 8, 8, 2], 0, 1, 'float32', 3);
    const profile = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(() => tf.sum(convnet.apply(x, { training: true }) as tf.Tensor).asScalar() as tf.Scalar);
      tf.dispose([value, grads]);
    });
    // kernelNames also lists op scopes (`fusedConv2d__op`), which are not kernels.
    const ran = [...new Set(profile.kernelNames)].filter((name) => !name.endsWith('__op'));
    expect(ran).to.include.members(['FusedBatchNorm', 'Mean', 'Conv2DBackpropFilter']);
    expect(missingKernels(ran, 'cpu')).to.deep.equal([]);
    expect(missingKernels(ran, 'ort-cpu')).to.deep.equal([]);
    expect(missingKernels(ran, 'wasm')).to.deep.equal(['Conv2DBackpropFilter']);
    tf.dispose(x);
    convnet.dispose();
  });

  it('extra kernels (e.g. a loss using tf.gather) are checked too', async () => {
    await selectBackend('wasm');
    const mlp = await buildModel({ kind: 'mlp', inputDim: 4, hidden: [], embeddingDim: 2 }, 1);
    const check = await ensureBackendSupports(mlp, { training: true, extraKernels: ['GatherV2', 'UnsortedSegmentSum'] });
    expect(check.switchedFrom).to.equal('wasm');
    expect(check.missing).to.deep.equal(['UnsortedSegmentSum']);
    mlp.dispose();
  });
});
