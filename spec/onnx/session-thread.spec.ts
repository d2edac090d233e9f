/**
 * @file Tests of the session runners: a {@link SessionThread} answers as the same model on this thread
 * does, keeps this thread's event loop running during inference (an in-process session blocks it),
 * copies or hands over inputs as asked, reports creation errors with createSession's codes and
 * messages, refuses runs once released, and runs an input stage (staged-session.ts) in front of the model.
 */
import { expect } from 'chai';
import { encodeModel, floatTensor, int64Tensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { createSession } from '../../lib/onnx/session.js';
import { openSessionRunner, type SessionRunner } from '../../lib/onnx/session-runner.js';
import { SessionThread } from '../../lib/onnx/session-thread.js';
import { Rng } from '../../lib/util/rng.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

/** x[batch, 3] -> y = x * 2 + 1, and top = TopK(y, 1). */
function smallModel(): Uint8Array {
  return encodeModel({
    graphName: 'affine',
    inputs: [tensorValueInfo('x', 'float32', ['batch', 3])],
    outputs: [tensorValueInfo('y', 'float32', ['batch', 3]), tensorValueInfo('top', 'float32', ['batch', 1]), tensorValueInfo('where', 'int64', ['batch', 1])],
    initializers: [floatTensor('two', [1], [2]), floatTensor('one', [1], [1]), int64Tensor('k', [1], [1])],
    nodes: [node('Mul', ['x', 'two'], ['x2']), node('Add', ['x2', 'one'], ['y']), node('TopK', ['y', 'k'], ['top', 'where'], { axis: { i: 1 } })],
  });
}

/** x[batch, 512] through `layers` 512x512 MatMul+Relu layers: slow enough to time (about 0.25 s at batch 2048 with 24 layers on one thread). */
function slowModel(layers: number): Uint8Array {
  const rng = new Rng(3);
  const weights = Array.from({ length: layers }, (_, i) => floatTensor(`w${i}`, [512, 512], Float32Array.from({ length: 512 * 512 }, () => rng.nextGaussian() / 23)));
  const nodes = weights.flatMap((_, i) => [node('MatMul', [i === 0 ? 'x' : `h${i - 1}`, `w${i}`], [`m${i}`]), node('Relu', [`m${i}`], [i === layers - 1 ? 'y' : `h${i}`])]);
  return encodeModel({ graphName: 'slow', inputs: [tensorValueInfo('x', 'float32', ['batch', 512])], outputs: [tensorValueInfo('y', 'float32', ['batch', 512])], initializers: weights, nodes });
}

/** Runs `runner` once on `inputs` and counts how often a 2 ms interval fired meanwhile. */
async function ticksDuring(runner: SessionRunner, inputs: Float32Array): Promise<{ ticks: number; ms: number }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 2);
  // Let the interval start before the run is scheduled.
  await new Promise((resolve) => setTimeout(resolve, 5));
  ticks = 0;
  const t0 = performance.now();
  await runner.run({ x: { data: inputs, dims: [inputs.length / 512, 512] } }, ['y']);
  const ms = performance.now() - t0;
  clearInterval(timer);
  return { ticks, ms };
}

describe('onnx/session-thread', () => {
  it('answers as the same model in process: every output, types and shapes', async () => {
    const thread = await openSessionRunner(smallModel(), { device: 'cpu', name: 'affine' });
    const local = await openSessionRunner(smallModel(), { device: 'cpu', name: 'affine', thread: false });
    try {
      expect(thread).to.be.instanceOf(SessionThread);
      expect(thread.provider).to.equal('cpu');
      expect(thread.attempts).to.deep.equal([{ provider: 'cpu' }]);
      expect(thread.io).to.deep.equal(local.io);
      const x = Float32Array.from([0.5, -1, 3, 7, 2, -4]);
      const inputs = { x: { data: x, dims: [2, 3] } };
      const a = (await thread.run(inputs, ['y', 'top', 'where'])).outputs;
      const b = (await local.run(inputs, ['y', 'top', 'where'])).outputs;
      expect(Array.from(a['y']?.data as Float32Array)).to.deep.equal([2, -1, 7, 15, 5, -7]);
      expect(a['y']?.dims).to.deep.equal([2, 3]);
      expect(a['where']?.type).to.equal('int64');
      expect(a['where']?.data).to.deep.equal(b['where']?.data);
      expect(a['top']?.data).to.deep.equal(Float32Array.from([7, 15]));
      // Without handing over, the caller's input is untouched and still usable.
      expect(Array.from(x)).to.deep.equal([0.5, -1, 3, 7, 2, -4]);
    } finally {
      await thread.release();
      await local.release();
    }
  });

  it('keeps this thread running during inference, where an in-process session blocks it', async function () {
    this.timeout(60_000);
    const bytes = slowModel(24);
    const rng = new Rng(4);
    const inputs = Float32Array.from({ length: 2048 * 512 }, () => rng.nextGaussian());
    const thread = await openSessionRunner(bytes, { device: 'cpu', name: 'slow', threads: 1 });
    const local = await openSessionRunner(bytes, { device: 'cpu', name: 'slow', threads: 1, thread: false });
    try {
      const blocked = await ticksDuring(local, inputs);
      const free = await ticksDuring(thread, inputs);
      expect(blocked.ms).to.be.greaterThan(50);
      expect(free.ms).to.be.greaterThan(50);
      // The in-process run is one synchronous native call: the interval cannot fire during it.
      expect(blocked.ticks).to.be.at.most(1);
      // On the thread, the interval keeps firing (at a quarter of its rate at least, for a busy machine).
      expect(free.ticks).to.be.at.least(Math.floor(free.ms / 2 / 4));
    } finally {
      await thread.release();
      await local.release();
    }
  });

  it('hands the input buffer over only when asked (transferInputs), and back with the answer', async () => {
    const thread = await openSessionRunner(smallModel(), { device: 'cpu' });
    try {
      const x = Float32Array.from([1, 2, 3]);
      const result = await thread.run({ x: { data: x, dims: [1, 3] } }, ['y'], { transferInputs: true });
      expect(Array.from(result.outputs['y']?.data as Float32Array)).to.deep.equal([3, 5, 7]);
      expect(x.length).to.equal(0); // detached: it went to the thread
      const back = result.inputs['x']?.data as Float32Array;
      expect(Array.from(back)).to.deep.equal([1, 2, 3]);
      back.set([4, 5, 6]); // usable again
      const again = await thread.run({ x: { data: back, dims: [1, 3] } }, ['y'], { transferInputs: true });
      expect(Array.from(again.outputs['y']?.data as Float32Array)).to.deep.equal([9, 11, 13]);
    } finally {
      await thread.release();
    }
  });

  for (const thread of [true, false]) {
    it(`runs inputs in shared memory (SharedArrayBuffer) ${thread ? 'on its thread' : 'on the calling thread'}: shared, not transferred, the same buffer back`, async () => {
      const runner = await openSessionRunner(smallModel(), { device: 'cpu', thread });
      try {
        const x = new Float32Array(new SharedArrayBuffer(12));
        x.set([1, 2, 3]);
        // Two runs in flight at once, each on its own values (each gets its own private copy).
        const y = new Float32Array(new SharedArrayBuffer(12));
        y.set([4, 5, 6]);
        const [first, second] = await Promise.all([
          runner.run({ x: { data: x, dims: [1, 3] } }, ['y'], { transferInputs: true }),
          runner.run({ x: { data: y, dims: [1, 3] } }, ['y'], { transferInputs: true }),
        ]);
        expect(Array.from(first.outputs['y']?.data as Float32Array)).to.deep.equal([3, 5, 7]);
        expect(Array.from(second.outputs['y']?.data as Float32Array)).to.deep.equal([9, 11, 13]);
        expect(x.length).to.equal(3); // not detached
        const back = first.inputs['x']?.data as Float32Array;
        expect(back.buffer).to.be.instanceOf(SharedArrayBuffer);
        back[0] = 10; // the same memory as x
        expect(x[0]).to.equal(10);
        const again = await runner.run({ x: { data: x, dims: [1, 3] } }, ['y'], { transferInputs: true });
        expect(Array.from(again.outputs['y']?.data as Float32Array)).to.deep.equal([21, 5, 7]);
      } finally {
        await runner.release();
      }
    });
  }

  for (const thread of [true, false]) {
    it(`runs an input stage first, on ${thread ? 'its thread' : 'the calling thread'}: uint8 in, the stage's output feeding the model's input`, async () => {
      // u[batch, 3] uint8 -> Cast to float32 -> the model's x.
      const stage = encodeModel({
        graphName: 'cast',
        inputs: [tensorValueInfo('u', 'uint8', ['batch', 3])],
        outputs: [tensorValueInfo('f', 'float32', ['batch', 3])],
        nodes: [node('Cast', ['u'], ['f'], { to: { i: 1 } })],
      });
      const runner = await openSessionRunner(smallModel(), { device: 'cpu', name: 'affine.onnx', thread });
      try {
        await runner.addInputStage({ model: stage, input: 'u', output: 'f', feeds: 'x' });
        const u = Uint8Array.from([1, 2, 3, 200, 0, 255]);
        const staged = await runner.run({ u: { data: u, dims: [2, 3] } }, ['y'], { transferInputs: true });
        expect(Array.from(staged.outputs['y']?.data as Float32Array)).to.deep.equal([3, 5, 7, 401, 1, 511]);
        expect(Array.from(staged.inputs['u']?.data as Uint8Array)).to.deep.equal([1, 2, 3, 200, 0, 255]);
        // The model's own input still runs the model directly.
        const direct = await runner.run({ x: { data: Float32Array.from([0.5, 1, 1.5]), dims: [1, 3] } }, ['y']);
        expect(Array.from(direct.outputs['y']?.data as Float32Array)).to.deep.equal([2, 3, 4]);
        const refused = async (action: Promise<void>, message: RegExp): Promise<void> => {
          const error = await action.then(() => undefined, (err: unknown) => err);
          expect(error, String(message)).to.be.instanceOf(Error);
          expect((error as Error).message).to.match(message);
        };
        await refused(runner.addInputStage({ model: stage, input: 'u', output: 'f', feeds: 'x' }), /affine\.onnx: an input stage is already set/);
      } finally {
        await runner.release();
      }
      const other = await openSessionRunner(smallModel(), { device: 'cpu', name: 'affine.onnx', thread });
      try {
        const error = await other.addInputStage({ model: stage, input: 'u', output: 'f', feeds: 'z' }).then(() => undefined, (err: unknown) => err);
        expect((error as Error).message).to.equal('affine.onnx: the input stage feeds "z", which is not an input of the model (x)');
      } finally {
        await other.release();
      }
    });
  }

  it('fails to create with the error createSession gives: same code, same message', async () => {
    const bad = new Uint8Array([1, 2, 3, 4, 5]);
    let direct: unknown;
    await createSession(bad, { device: 'cpu', name: 'bad.onnx' }).catch((err: unknown) => (direct = err));
    const err = await expectDmlError(SessionThread.create(bad, { device: 'cpu', name: 'bad.onnx' }), 'E_MODEL', /bad\.onnx/);
    expect(err.message).to.equal((direct as Error).message);
    await expectDmlError(SessionThread.create(smallModel(), { device: 'tpu' as never }), 'E_ARG', /device/);
  });

  it('refuses runs once released, and release is idempotent', async () => {
    const thread = await SessionThread.create(smallModel(), { device: 'cpu', name: 'affine.onnx' });
    await thread.release();
    await thread.release();
    await expectDmlError(thread.run({ x: { data: new Float32Array(3), dims: [1, 3] } }, ['y']), 'E_MODEL', /affine\.onnx: the session was released/);
  });
});
