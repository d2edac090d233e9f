/**
 * @file Tests of the session factory: explicit CUDA -> CPU fallback with the recorded reason, CPU-only
 * sessions, clear errors for bad paths, bad bytes and bad options, and the I/O description.
 *
 * The development machines have no GPU and no CUDA provider library, so the CUDA attempt fails there;
 * the tests assert behaviour consistent with whatever a `cuda` attempt does on the machine running them.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import * as ort from 'onnxruntime-node';
import { encodeModel, int64Tensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
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

  it('auto tries CUDA, then CPU, recording why CUDA failed (consistent with a direct cuda attempt)', async () => {
    let cudaError: DmlError | undefined;
    try {
      const cuda = await createSession(modelPath, { device: 'cuda' });
      expect(cuda.attempts).to.deep.equal([{ provider: 'cuda' }]);
      await cuda.session.release();
    } catch (err) {
      expect(err).to.be.instanceOf(DmlError);
      cudaError = err as DmlError;
    }
    const auto = await createSession(modelPath, { device: 'auto' });
    if (cudaError === undefined) {
      expect(auto.provider).to.equal('cuda');
      expect(auto.attempts).to.deep.equal([{ provider: 'cuda' }]);
    } else {
      expect(cudaError.code).to.equal('E_MODEL');
      expect(cudaError.message).to.match(/device cuda\) — cuda: \S/);
      expect(auto.provider).to.equal('cpu');
      expect(auto.attempts).to.have.length(2);
      const [cudaAttempt, cpuAttempt] = auto.attempts;
      expect(cudaAttempt?.provider).to.equal('cuda');
      expect(cudaAttempt?.error).to.be.a('string').and.not.equal('');
      expect(cudaError.message).to.contain(cudaAttempt?.error);
      expect(cpuAttempt).to.deep.equal({ provider: 'cpu' });
    }
    const out = await auto.session.run({ x: new ort.Tensor('float32', Float32Array.from([-1, 2, -3, 4, 0.5]), [1, 5]) });
    expect(Array.from(out.y?.data as Float32Array)).to.deep.equal([0, 2, 0, 4, 0.5]);
    await auto.session.release();
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
      /^Expected one of 'auto', 'cuda', 'cpu' for device but received "gpu"$/,
    );
    await expectDmlError(createSession(modelPath, { device: 'cpu', threads: 0 }), 'E_ARG', /^Expected a positive integer for threads but received 0$/);
    await expectDmlError(createSession('', { device: 'cpu' }), 'E_ARG', /for model but received ""/);
    await expectDmlError(createSession(new Uint8Array(0), { device: 'cpu' }), 'E_ARG', /for model but received Uint8Array of length 0/);
  });
});
