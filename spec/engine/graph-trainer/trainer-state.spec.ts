/**
 * TrainerState: where the graph trainer's state lives between runs. Device tensors are stood in for by
 * onnxruntime's `Tensor.fromGpuBuffer` with a download and a dispose of our own (no GPU here): a value
 * in device memory is read only after synchronize(), a replaced or unused device tensor is released, and
 * values in JavaScript memory are read as they are. The graph trainer itself gives the same weights with
 * its state kept as run outputs (`stateResidency: 'device'`) as with every output back in JavaScript.
 */
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { releaseUnkept, TrainerState } from '../../../lib/engine/graph-trainer/trainer-state.js';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../../lib/onnx/builder.js';
import ort from '../../../lib/onnx/ort.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

/** A stand-in for a tensor in GPU memory holding `values`; `log` records its downloads and disposals. */
function deviceTensor(values: number[], log: string[], name: string): ort.Tensor {
  return ort.Tensor.fromGpuBuffer({} as never, {
    dataType: 'float32',
    dims: [values.length],
    download: async () => {
      log.push(`download ${name}`);
      return Float32Array.from(values);
    },
    dispose: () => log.push(`dispose ${name}`),
  });
}

describe('TrainerState', () => {
  it('reads a device tensor only after synchronize(), which moves it to JavaScript memory and releases its buffer; a replaced device tensor is released', async () => {
    const log: string[] = [];
    const state = new TrainerState();
    state.setValues('w', Float32Array.of(1, 2), [2]);
    expect(Array.from(state.value('w') ?? [])).to.deep.equal([1, 2]);
    state.set('w', deviceTensor([3, 4], log, 'a'));
    await expectDmlError(() => state.value('w'), 'E_ARG', "w is in device memory since the last step; await the trainer's synchronize() before reading it");
    await state.synchronize();
    await state.synchronize();
    expect(log).to.deep.equal(['download a', 'dispose a']);
    expect(Array.from(state.value('w') ?? [])).to.deep.equal([3, 4]);
    expect(state.tensor('w')?.location).to.equal('cpu');
    state.set('w', deviceTensor([5, 6], log, 'b'));
    state.set('w', deviceTensor([7, 8], log, 'c'));
    expect(log).to.deep.equal(['download a', 'dispose a', 'dispose b']);
    state.release();
    expect(log).to.deep.equal(['download a', 'dispose a', 'dispose b', 'dispose c']);
    expect(state.has('w')).to.equal(false);
  });

  it('releaseUnkept disposes the device outputs of a run that the state does not hold, and only those', () => {
    const log: string[] = [];
    const state = new TrainerState();
    const kept = deviceTensor([1], log, 'kept');
    state.set('w', kept);
    releaseUnkept({ next: kept, activation: deviceTensor([2], log, 'activation'), loss: new ort.Tensor('float32', Float32Array.of(0.5), []) }, state);
    expect(log).to.deep.equal(['dispose activation']);
  });
});

describe('GraphTrainer state residency', function () {
  this.timeout(30_000);
  const model = encodeModel({
    graphName: 'mlp',
    inputs: [tensorValueInfo('x', 'float32', ['batch', 3])],
    outputs: [tensorValueInfo('y', 'float32', ['batch', 2])],
    nodes: [node('Gemm', ['x', 'W', 'b'], ['h']), node('BatchNormalization', ['h', 'g', 'beta', 'mean', 'var'], ['n']), node('Relu', ['n'], ['y'])],
    initializers: [
      floatTensor('W', [3, 2], [0.5, -0.25, 1, 0.75, -0.5, 0.125]),
      floatTensor('b', [2], [0.1, -0.2]),
      floatTensor('g', [2], [1, 1]),
      floatTensor('beta', [2], [0, 0]),
      floatTensor('mean', [2], [0, 0]),
      floatTensor('var', [2], [1, 1]),
    ],
  });
  const x = Float32Array.from([1, 2, 3, -1, 0.5, 2, 0, -2, 1, 0.25, 0.5, -0.75]);

  it("gives the same weights, slots and running statistics after 3 Adam steps whether the state stays as run outputs ('device') or comes back each run ('host')", async () => {
    const run = async (stateResidency: 'device' | 'host'): Promise<Map<string, number[]>> => {
      const trainer = await GraphTrainer.create({ model, itemDims: [3], optimizer: { kind: 'adam' }, threads: 1, stateResidency });
      for (const lr of [0.1, 0.05, 0.2]) {
        const y = await trainer.forward(x);
        await trainer.step(x, y.map((v, i) => v - (i % 3)), lr);
      }
      await trainer.synchronize();
      const values = new Map([...trainer.weights()].map(([k, v]) => [k, Array.from(v)]));
      for (const [slot, v] of Object.entries(trainer.slots('W'))) values.set(`W:${slot}`, Array.from(v ?? []));
      await trainer.release();
      return values;
    };
    const device = await run('device');
    expect(device.get('mean')).to.not.deep.equal([0, 0]);
    expect(device).to.deep.equal(await run('host'));
  });
});
