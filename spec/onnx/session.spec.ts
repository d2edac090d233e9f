/**
 * @file Tests of the session factory: explicit CUDA -> WebGPU -> CPU fallback with the recorded reasons,
 * CPU-only sessions, clear errors for bad paths, bad bytes and bad options, and the I/O description.
 *
 * The development machines and CI have no GPU, no CUDA provider library and no Vulkan loader, so the
 * CUDA and WebGPU attempts fail there; the tests assert behaviour consistent with whatever direct `cuda`
 * and `webgpu` attempts do on the machine running them (on the GPU machine, WebGPU loads).
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import * as ort from 'onnxruntime-node';
import { encodeModel, int64Tensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { describeProviderChoice } from '../../lib/onnx/devices.js';
import { createSession, describeIo, type CreateSessionOptions } from '../../lib/onnx/session.js';
import { DmlError } from '../../lib/errors.js';

/** x[batch, 5] -> y = Relu(x), plus top-2 values and int64 indices. */
function model(): Uint8Array {
  return encodeModel({
    graphName: 'relu_topk',
    inputs: [tensorValueInfo('x', 'float32', ['batch', 5])],
    outputs: [
      tensorValueInfo('y', 'float32', ['batch', 5]),
      tensorValueInfo('top', 'float32', ['batch', 2]),
      tensorValueInfo('where', 'int64', ['batch', 2]),
    ],
    initializers: [int64Tensor('k', [1], [2])],
    nodes: [node('Relu', ['x'], ['y']), node('TopK', ['y', 'k'], ['top', 'where'], { axis: { i: 1 } })],
  });
}

describe('onnx/session', () => {
  let dir: string;
  let modelPath: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'dmlkit-session-'));
    modelPath = path.join(dir, 'relu.onnx');
    await writeFile(modelPath, model());
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** What an explicit attempt with `device` does here: the session's provider, or the error. */
  async function tryDevice(device: 'cuda' | 'webgpu'): Promise<DmlError | undefined> {
    try {
      const created = await createSession(modelPath, { device });
      expect(created.attempts).to.deep.equal([{ provider: device }]);
      await created.session.release();
      return undefined;
    } catch (err) {
      expect(err).to.be.instanceOf(DmlError);
      expect((err as DmlError).code).to.equal('E_MODEL');
      expect((err as DmlError).message).to.match(new RegExp(`device ${device}\\) — ${device}: \\S`));
      return err as DmlError;
    }
  }

  it('auto tries CUDA, then WebGPU, then CPU, recording why each failed (consistent with direct attempts)', async () => {
    const cudaError = await tryDevice('cuda');
    const webgpuError = await tryDevice('webgpu');
    const auto = await createSession(modelPath, { device: 'auto' });
    // The first provider that loads on its own is the one auto ends on; each failure before it is
    // recorded with the reason the direct attempt gave.
    const failed = [['cuda', cudaError], ['webgpu', webgpuError]] as const;
    const provider = cudaError === undefined ? 'cuda' : webgpuError === undefined ? 'webgpu' : 'cpu';
    const firstLoaded = failed.findIndex(([, error]) => error === undefined);
    const tried = (firstLoaded === -1 ? failed : failed.slice(0, firstLoaded)).map(([p]) => p);
    expect(auto.provider).to.equal(provider);
    expect(auto.attempts.map((a) => a.provider)).to.deep.equal([...tried, provider]);
    expect(auto.attempts.at(-1)).to.deep.equal({ provider });
    for (const [i, attempt] of auto.attempts.slice(0, -1).entries()) {
      const direct = (failed[i]?.[1] as DmlError).message.split(`— ${attempt.provider}: `)[1] as string;
      expect(attempt.error).to.be.a('string').and.not.match(/^\/onnxruntime_src|^$/);
      expect(attempt.error).to.equal(direct);
    }
    const out = await auto.session.run({ x: new ort.Tensor('float32', Float32Array.from([-1, 2, -3, 4, 0.5]), [1, 5]) });
    expect(Array.from(out.y?.data as Float32Array)).to.deep.equal([0, 2, 0, 4, 0.5]);
    await auto.session.release();
  });

  it('does not ask onnxruntime for WebGPU on a Linux machine without a Vulkan loader or GPU device, naming why', async () => {
    const loader = ['/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu', '/usr/lib64', '/lib64', '/usr/lib', '/lib', '/usr/local/lib', ...(process.env.LD_LIBRARY_PATH ?? '').split(':')]
      .filter((d) => d !== '')
      .some((d) => existsSync(path.join(d, 'libvulkan.so.1')));
    const gpu = (existsSync('/dev/dri') && readdirSync('/dev/dri').some((n) => n.startsWith('renderD'))) || existsSync('/dev/nvidiactl') || existsSync('/dev/dxg');
    // On a machine with both (the GPU machine), the auto test above covers what onnxruntime answers.
    if (process.platform !== 'linux' || (loader && gpu)) return;
    // No GPU at all is the reason given first (the noise rule of the reports keys on it).
    const reason = !gpu
      ? 'no GPU device (/dev/dri/renderD*, /dev/nvidiactl or /dev/dxg) on this machine'
      : 'no Vulkan loader (libvulkan.so.1) on this machine; WebGPU needs it and a GPU driver with Vulkan support';
    const auto = await createSession(modelPath, { device: 'auto' });
    expect(auto.attempts.find((a) => a.provider === 'webgpu')).to.deep.equal({ provider: 'webgpu', error: reason });
    await auto.session.release();
    const escaped = reason.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    await expectDmlError(createSession(modelPath, { device: 'webgpu' }), 'E_MODEL', new RegExp(`\\(device webgpu\\) — webgpu: ${escaped}$`));
  });

  it('describes the provider choice in one line', () => {
    expect(describeProviderChoice('m.onnx', { provider: 'cpu', attempts: [{ provider: 'cuda', error: 'no library' }, { provider: 'webgpu', error: 'no adapter' }, { provider: 'cpu' }] })).to.equal(
      'm.onnx runs on cpu (cuda: no library; webgpu: no adapter)',
    );
    expect(describeProviderChoice('m.onnx', { provider: 'webgpu', attempts: [{ provider: 'webgpu' }] })).to.equal('m.onnx runs on webgpu');
    // auto on a machine without any GPU device: one short note, not the probes' reasons.
    const none = { provider: 'cpu' as const, attempts: [{ provider: 'cuda' as const, error: 'no GPU device for CUDA (/dev/nvidiactl or /dev/dxg) on this machine' }, { provider: 'webgpu' as const, error: 'no GPU device (/dev/dri/renderD*, /dev/nvidiactl or /dev/dxg) on this machine' }, { provider: 'cpu' as const }] };
    expect(describeProviderChoice('m.onnx', none)).to.equal('m.onnx runs on cpu (no GPU on this machine)');
    // A GPU that could exist (CUDA's library missing beside a GPU node) keeps every reason.
    expect(describeProviderChoice('m.onnx', { ...none, attempts: [{ provider: 'cuda', error: 'Failed to load shared library' }, ...none.attempts.slice(1)] })).to.match(/^m\.onnx runs on cpu \(cuda: Failed to load shared library; webgpu: no GPU device/);
  });

  it('creates a CPU session from bytes with one attempt and the requested threads', async () => {
    const created = await createSession(model(), { device: 'cpu', threads: 1, name: 'relu' });
    expect(created.provider).to.equal('cpu');
    expect(created.attempts).to.deep.equal([{ provider: 'cpu' }]);
    const out = await created.session.run({ x: new ort.Tensor('float32', Float32Array.from([1, 5, 3, 2, 4]), [1, 5]) });
    expect(Array.from(out.top?.data as Float32Array)).to.deep.equal([5, 4]);
    expect(Array.from(out.where?.data as BigInt64Array)).to.deep.equal([1n, 4n]);
    await created.session.release();
  });

  it('describes inputs and outputs with symbolic dims as strings and element types', async () => {
    const { session } = await createSession(modelPath, { device: 'cpu' });
    expect(describeIo(session)).to.deep.equal({
      inputs: [{ name: 'x', type: 'float32', shape: ['batch', 5] }],
      outputs: [
        { name: 'y', type: 'float32', shape: ['batch', 5] },
        { name: 'top', type: 'float32', shape: ['batch', 2] },
        { name: 'where', type: 'int64', shape: ['batch', 2] },
      ],
    });
    await session.release();
  });

  it('reports a missing path as E_NOT_FOUND naming the path', async () => {
    const missing = path.join(dir, 'missing.onnx');
    await expectDmlError(createSession(missing, { device: 'cpu' }), 'E_NOT_FOUND', new RegExp(`^Model file ${missing} cannot be read: ENOENT`));
  });

  it('reports bytes that are not a model as E_MODEL with the CPU reason', async () => {
    const garbage = Uint8Array.from([1, 2, 3, 4]);
    await expectDmlError(
      createSession(garbage, { device: 'cpu', name: 'garbage.onnx' }),
      'E_MODEL',
      /^Cannot create an onnxruntime session for garbage.onnx \(device cpu\) — cpu: .*protobuf parsing failed/,
    );
  });

  it('rejects bad options naming the parameter', async () => {
    await expectDmlError(
      createSession(modelPath, { device: 'gpu' } as unknown as CreateSessionOptions),
      'E_ARG',
      /^Expected one of 'auto', 'cuda', 'webgpu', 'cpu' for device but received "gpu"$/,
    );
    await expectDmlError(createSession(modelPath, { device: 'cpu', threads: 0 }), 'E_ARG', /^Expected a positive integer for threads but received 0$/);
    await expectDmlError(createSession('', { device: 'cpu' }), 'E_ARG', /for model but received ""/);
    await expectDmlError(createSession(new Uint8Array(0), { device: 'cpu' }), 'E_ARG', /for model but received Uint8Array of length 0/);
  });
});
