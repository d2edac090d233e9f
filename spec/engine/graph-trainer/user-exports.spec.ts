/**
 * The graph trainer on PyTorch exports made as users make them (spec/fixtures/user-exports, written by
 * scripts/reference/torch_user_exports.py): `torch.onnx.export(model.eval(), x, f, opset_version=13,
 * training=PRESERVE, do_constant_folding=False)` stores the equal ones and zeros of fresh BatchNorms
 * once and names the others through Identity nodes. Trained from that file, every tensor must come back
 * under its own name with PyTorch's values after the same steps, and the written model must compute
 * what PyTorch's trained model computes.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { GraphTrainer } from '../../../lib/engine/graph-trainer/graph-trainer.js';
import { readOnnxGraph } from '../../../lib/engine/graph/onnx-ir.js';
import { decodeModel } from '../../../lib/onnx/builder.js';
import ort from '../../../lib/onnx/ort.js';
import { relativeError } from '../../helpers/relative-error.js';

const FIXTURES = new URL('../../fixtures/user-exports/', import.meta.url);

interface TrainedRecord {
  aliases: string[];
  optimizer: { kind: 'adam'; lr: number };
  inputDims: number[];
  input: number[];
  seeds: number[][];
  tensors: Record<string, number[]>;
  evalOutput: number[];
}

describe('GraphTrainer on PyTorch exports as users make them', function () {
  this.timeout(60_000);
  const record = JSON.parse(readFileSync(new URL('trained.json', FIXTURES), 'utf8')) as TrainedRecord;
  const model = new Uint8Array(readFileSync(new URL('aliased.onnx', FIXTURES)));

  it('the fixture has what it exists for: running statistics and BatchNorm parameters stored as Identity aliases of other layers', () => {
    const aliases = (decodeModel(model, 'aliased.onnx').graph?.node ?? []).filter((n) => n.opType === 'Identity').map((n) => n.output?.[0]);
    expect(aliases).to.include.members(['features.0.1.running_var', 'features.1.1.weight', 'features.1.1.running_var', 'neck.running_mean']);
    expect(aliases).to.have.members(record.aliases);
  });

  it("trains every aliased tensor on its own and writes each back under its own name: after 3 Adam steps the model equals PyTorch's", async () => {
    const trainer = await GraphTrainer.create({ model, itemDims: record.inputDims.slice(1), optimizer: { kind: record.optimizer.kind }, threads: 1 });
    const parameters = Object.keys(record.tensors).filter((k) => !/running_(mean|var)$/.test(k));
    expect([...trainer.trainedNames].sort()).to.deep.equal([...parameters].sort());
    const input = Float32Array.from(record.input);
    for (const seed of record.seeds) await trainer.step(input, Float32Array.from(seed), record.optimizer.lr);
    const exported = trainer.exportModel();
    await trainer.release();
    const nodes = decodeModel(exported, 'exported').graph?.node ?? [];
    expect(nodes.filter((n) => n.opType === 'Identity' || n.opType === 'Constant').map((n) => n.output?.[0]), 'no alias left in the written model').to.deep.equal([]);
    const initializers = readOnnxGraph(exported, 'exported').initializers;
    for (const [name, expected] of Object.entries(record.tensors)) {
      const actual = initializers.get(name)?.data;
      expect(actual, name).to.not.equal(undefined);
      expect(relativeError(actual as Float32Array, expected), name).to.be.below(1e-4);
    }
    const session = await ort.InferenceSession.create(exported);
    const out = await session.run({ input: new ort.Tensor('float32', input, record.inputDims) });
    await session.release();
    expect(relativeError(out['embedding']?.data as Float32Array, record.evalOutput), "the written model's output against PyTorch's trained model in eval mode").to.be.below(1e-4);
  });
});
