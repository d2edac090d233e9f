import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { onCpuBackend } from '../helpers/tf-backend.js';
import * as tf from '@tensorflow/tfjs';
import { loadCheckpoint, loadOnnxCheckpoint, saveCheckpoint } from '../../lib/train/checkpoint-io.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { sha256 } from '../../lib/util/hash.js';

const SPEC = { kind: 'mlp' as const, inputDim: 6, hidden: [5], embeddingDim: 3 };

/** Runs `steps` Adam steps on a toy loss (pull every embedding towards (1, 0, 0)). */
function train(model: tf.LayersModel, optimizer: tf.Optimizer, steps: number): void {
  const x = tf.randomNormal([8, 6], 0, 1, 'float32', 17);
  for (let s = 0; s < steps; s++) {
    const cost = optimizer.minimize(() => tf.neg(tf.sum(tf.slice(model.apply(x, { training: true }) as tf.Tensor, [0, 0], [-1, 1]))).asScalar(), true);
    cost?.dispose();
  }
  x.dispose();
}

const values = (ts: tf.Tensor[]): number[][] => ts.map((t) => Array.from(t.dataSync()));

async function optimizerState(optimizer: tf.Optimizer): Promise<Array<{ name: string; values: number[] }>> {
  const named = await optimizer.getWeights();
  return named.map(({ name, tensor }) => ({ name: name.replace(/_\d+\//, '/'), values: Array.from(tensor.dataSync()) }));
}

/** Replaces fs/promises' `name` for this module's named imports too, until the returned function is called. */
function patchFs<K extends 'rename' | 'open'>(name: K, replacement: (typeof fsp)[K]): () => void {
  const original = fsp[name];
  (fsp as unknown as Record<string, unknown>)[name] = replacement;
  syncBuiltinESMExports();
  return () => {
    (fsp as unknown as Record<string, unknown>)[name] = original;
    syncBuiltinESMExports();
  };
}

describe('train/checkpoint-io', () => {
  let dir: string;
  onCpuBackend();
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-ckpt-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('round-trips weights, Adam state and the JSON state exactly; training on continues identically', async () => {
    const model = await buildModel(SPEC, 1);
    const optimizer = tf.train.adam(0.01);
    train(model, optimizer, 3);
    const target = path.join(dir, 'ckpt');
    const state = { epoch: 2, batchIndex: 5, seed: 7, history: [{ loss: 0.5 }] };
    await saveCheckpoint(target, { model, optimizer, state });
    expect(readdirSync(target).sort()).to.deep.equal(['checkpoint.json', 'model.json', 'optimizer.bin', 'optimizer.json', 'state.json', 'weights.bin']);
    expect(readdirSync(dir)).to.deep.equal(['ckpt']);

    const loaded = await loadCheckpoint(target);
    expect(loaded.state).to.deep.equal(state);
    expect(values(loaded.model.getWeights())).to.deep.equal(values(model.getWeights()));
    expect(loaded.optimizer?.getClassName()).to.equal('Adam');
    expect(loaded.optimizer?.getConfig()).to.deep.equal(optimizer.getConfig());
    const before = await optimizerState(optimizer);
    expect(before.map((w) => w.name)).to.have.length(1 + 2 * 4); // iterations + m and v of 4 variables
    // The same values, the slots now named after the loaded model's variables (this process names them
    // afresh, e.g. head_dense/kernel_20 where the saved model had head_dense/kernel_19).
    const after = await optimizerState(loaded.optimizer as tf.Optimizer);
    expect(after.map((w) => w.values)).to.deep.equal(before.map((w) => w.values));
    const loadedVariables = loaded.model.trainableWeights.map((w) => (w.read() as tf.Variable).name);
    const slotNames = (await (loaded.optimizer as tf.Optimizer).getWeights()).map((w) => w.name).slice(1);
    for (const name of slotNames) expect(loadedVariables.some((v) => name.startsWith(`${v}/`)), name).to.equal(true);

    // Two more steps from the original and from the restored pair give the same weights.
    train(model, optimizer, 2);
    train(loaded.model, loaded.optimizer as tf.Optimizer, 2);
    expect(values(loaded.model.getWeights())).to.deep.equal(values(model.getWeights()));

    // Restoring into a given optimizer checks its class.
    await expectDmlError(
      loadCheckpoint(target, { optimizer: tf.train.sgd(0.1) }),
      'E_MODEL',
      `Checkpoint ${target}: the checkpoint holds Adam state but the optimizer given is SGD`,
    );
    const into = tf.train.adam(0.01);
    expect((await loadCheckpoint(target, { optimizer: into })).optimizer).to.equal(into);
    model.dispose();
    loaded.model.dispose();
  });

  it('replaces an existing checkpoint, and refuses to replace a folder that is not one', async () => {
    const target = path.join(dir, 'ckpt');
    const a = await buildModel(SPEC, 1);
    const b = await buildModel(SPEC, 2);
    await saveCheckpoint(target, { model: a, state: 'a' });
    await saveCheckpoint(target, { model: b });
    const loaded = await loadCheckpoint(target);
    expect(values(loaded.model.getWeights())).to.deep.equal(values(b.getWeights()));
    expect(loaded).not.to.have.property('state');
    expect(loaded).not.to.have.property('optimizer');
    expect(readdirSync(dir)).to.deep.equal(['ckpt']);

    const other = path.join(dir, 'photos');
    mkdirSync(other);
    writeFileSync(path.join(other, 'cat.jpg'), 'x');
    await expectDmlError(
      saveCheckpoint(other, { model: a }),
      'E_ARG',
      `Expected a new or empty folder, or an existing dmlkit checkpoint (it is replaced) for dir but received "${other}"`,
    );
    expect(readdirSync(other)).to.deep.equal(['cat.jpg']);
    for (const m of [a, b, loaded.model]) m.dispose();
  });

  it('a failure while writing leaves the previous checkpoint intact and no temporary files', async () => {
    const target = path.join(dir, 'ckpt');
    const a = await buildModel(SPEC, 1);
    const b = await buildModel(SPEC, 2);
    await saveCheckpoint(target, { model: a, state: { epoch: 1 } });
    const originalOpen = fsp.open;
    const restore = patchFs('open', (async (file: Parameters<typeof fsp.open>[0], ...rest: unknown[]) => {
      if (String(file).endsWith('state.json')) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      return (originalOpen as (...args: unknown[]) => Promise<unknown>)(file, ...rest);
    }) as typeof fsp.open);
    try {
      await expectDmlError(saveCheckpoint(target, { model: b, state: { epoch: 2 } }), 'E_IO', `Cannot write checkpoint ${target}: ENOSPC: no space left on device`);
    } finally {
      restore();
    }
    expect(readdirSync(dir)).to.deep.equal(['ckpt']);
    const loaded = await loadCheckpoint(target);
    expect(loaded.state).to.deep.equal({ epoch: 1 });
    expect(values(loaded.model.getWeights())).to.deep.equal(values(a.getWeights()));
    for (const m of [a, b, loaded.model]) m.dispose();
  });

  it('a failure at the final rename puts the previous checkpoint back', async () => {
    const target = path.join(dir, 'ckpt');
    const a = await buildModel(SPEC, 1);
    const b = await buildModel(SPEC, 2);
    await saveCheckpoint(target, { model: a, state: { epoch: 1 } });
    const originalRename = fsp.rename;
    const restore = patchFs('rename', (async (from: string, to: string) => {
      if (to === target && from.endsWith('.tmp')) throw new Error('EIO: i/o error, rename');
      return originalRename(from, to);
    }) as typeof fsp.rename);
    try {
      await expectDmlError(saveCheckpoint(target, { model: b, state: { epoch: 2 } }), 'E_IO', `Cannot write checkpoint ${target}: EIO: i/o error, rename`);
    } finally {
      restore();
    }
    expect(readdirSync(dir)).to.deep.equal(['ckpt']);
    expect((await loadCheckpoint(target)).state).to.deep.equal({ epoch: 1 });
    a.dispose();
    b.dispose();
  });

  it('a missing or corrupt checkpoint is a clear error naming the path', async () => {
    const target = path.join(dir, 'ckpt');
    await expectDmlError(loadCheckpoint(target), 'E_NOT_FOUND', `No checkpoint at ${target} (checkpoint.json is missing)`);
    const model = await buildModel(SPEC, 1);
    await saveCheckpoint(target, { model, optimizer: tf.train.adam(0.1), state: [1, 2] });

    const weights = path.join(target, 'weights.bin');
    const good = readFileSync(weights);
    writeFileSync(weights, good.subarray(0, 40));
    await expectDmlError(
      loadCheckpoint(target),
      'E_MODEL',
      `Checkpoint ${target} is corrupt: weights.bin has 40 bytes but checkpoint.json records ${good.length} (truncated or replaced)`,
    );
    // Same size, one bit flipped: the checksum tells, and the message says so (not "N bytes and not N bytes").
    const flipped = Buffer.from(good);
    flipped[3] = (flipped[3] as number) ^ 1;
    writeFileSync(weights, flipped);
    await expectDmlError(
      loadCheckpoint(target),
      'E_MODEL',
      `Checkpoint ${target} is corrupt: weights.bin has the recorded size (${good.length} bytes) but its SHA-256 checksum ${sha256(flipped).slice(0, 12)}… differs from the ${sha256(good).slice(0, 12)}… that checkpoint.json records (its content was altered)`,
    );
    writeFileSync(weights, good);
    rmSync(path.join(target, 'state.json'));
    await expectDmlError(loadCheckpoint(target), 'E_MODEL', new RegExp(`^Checkpoint ${target} is corrupt: cannot read state.json: ENOENT`));
    writeFileSync(path.join(target, 'checkpoint.json'), '{');
    await expectDmlError(loadCheckpoint(target), 'E_MODEL', `Checkpoint ${target} is corrupt: checkpoint.json is not valid JSON`);

    // An interrupted save (crash between the two renames) is named in the error.
    rmSync(target, { recursive: true });
    await saveCheckpoint(path.join(dir, '.ckpt.previous'), { model });
    await expectDmlError(
      loadCheckpoint(target),
      'E_NOT_FOUND',
      `No checkpoint at ${target} (checkpoint.json is missing); an interrupted save left the previous checkpoint at ${path.join(dir, '.ckpt.previous')}`,
    );
    await saveCheckpoint(target, { model });
    expect(existsSync(path.join(dir, '.ckpt.previous'))).to.equal(false);
    model.dispose();
  });

  it('an ONNX network checkpoint: model.onnx, the arrays and the state round-trip; each loader refuses the other kind', async () => {
    const onnx = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) % 256);
    const arrays = new Map([['w:exp_avg', Float32Array.of(1.5, -2, 3e-8)], ['w:exp_avg_sq', Float32Array.of(0.25)]]);
    await saveCheckpoint(dir, { model: onnx, arrays, state: { step: 3 } });
    expect(readdirSync(dir).sort()).to.deep.equal(['arrays.bin', 'arrays.json', 'checkpoint.json', 'model.onnx', 'state.json']);
    const loaded = await loadOnnxCheckpoint(dir);
    expect(Array.from(loaded.onnx)).to.deep.equal(Array.from(onnx));
    expect([...(loaded.arrays ?? [])].map(([k, v]) => [k, Array.from(v)])).to.deep.equal([...arrays].map(([k, v]) => [k, Array.from(v)]));
    expect(loaded.state).to.deep.equal({ step: 3 });
    await expectDmlError(loadCheckpoint(dir), 'E_ARG', `Checkpoint ${dir} holds an ONNX network (model.kind "onnx"): read it with loadOnnxCheckpoint`);
    const tfjsDir = path.join(dir, 'tfjs');
    await saveCheckpoint(tfjsDir, { model: await buildModel({ kind: 'mlp', inputDim: 4, hidden: [], embeddingDim: 2 }, 0) });
    await expectDmlError(loadOnnxCheckpoint(tfjsDir), 'E_ARG', `Checkpoint ${tfjsDir} holds a TensorFlow.js model, not an ONNX network: read it with loadCheckpoint`);
    writeFileSync(path.join(dir, 'model.onnx'), onnx.subarray(1));
    await expectDmlError(loadOnnxCheckpoint(dir), 'E_MODEL', /model\.onnx has 299 bytes but checkpoint\.json records 300/);
  });

  it('names bad arguments', async () => {
    const model = await buildModel(SPEC, 1);
    await expectDmlError(saveCheckpoint('', { model }), 'E_ARG', 'Expected a folder path for dir but received ""');
    await expectDmlError(saveCheckpoint(dir, { model: {} as tf.LayersModel }), 'E_ARG', 'Expected a tf.LayersModel or ONNX bytes for contents.model but received object');
    await expectDmlError(
      saveCheckpoint(path.join(dir, 'x'), { model, state: { n: 1n } }),
      'E_ARG',
      /^Expected a JSON-serialisable value \(Do not know how to serialize a BigInt\) for contents.state but received object$/,
    );
    expect(existsSync(path.join(dir, 'x'))).to.equal(false);
    model.dispose();
  });
});
