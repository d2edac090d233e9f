/**
 * selectEngine (lib/train/training-engine.ts): which engine trains a run. `backend: "auto"` picks the
 * graph trainer unless TensorFlow.js's native backend loads, follows a resumed checkpoint's engine, and
 * takes the graph trainer for what only it does; a run records the choice in report.json.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseTrainConfig } from '../../lib/train/config.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import type { ModelSpec } from '../../lib/train/models/model-spec.js';
import { train } from '../../lib/train/trainer.js';
import { selectEngine } from '../../lib/train/training-engine.js';
import { onCpuBackend } from '../helpers/tf-backend.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

describe('selectEngine', function () {
  this.timeout(60_000);
  before(onCpuBackend);
  const config = (overrides: Record<string, unknown>): ReturnType<typeof parseTrainConfig> => parseTrainConfig(tinyTrainConfig('runs/unused', overrides), 'spec');

  it('auto: the graph trainer without a native TensorFlow.js backend, TensorFlow.js with one; an explicit backend as given', async () => {
    const auto = config({ backend: 'auto' });
    const model = await buildModel(auto.model as ModelSpec, 0);
    expect(selectEngine(auto, 'ort-cpu', undefined, model)).to.deep.equal({
      requested: 'auto',
      engine: 'onnx',
      reason: 'no TensorFlow.js native backend installed (@tensorflow/tfjs-node or -gpu): the graph trainer, faster on the CPU',
    });
    expect(selectEngine(auto, 'tfjs-node', undefined, model)).to.deep.equal({ requested: 'auto', engine: 'tfjs', reason: "TensorFlow.js's native backend loads (tfjs-node)" });
    expect(selectEngine(config({ backend: 'cpu' }), 'cpu', undefined, model).engine).to.equal('tfjs');
    expect(selectEngine(config({ backend: 'onnx' }), 'tfjs-node-gpu', undefined, model).engine).to.equal('onnx');
  });

  it("auto: a resume follows its checkpoint's engine; device and microBatch choose the graph trainer", async () => {
    const auto = config({ backend: 'auto' });
    const model = await buildModel(auto.model as ModelSpec, 0);
    expect(selectEngine(auto, 'ort-cpu', 'tfjs', model)).to.include({ engine: 'tfjs', reason: 'the checkpoint a resume continues was trained by TensorFlow.js' });
    expect(selectEngine(auto, 'tfjs-node', 'onnx', model).engine).to.equal('onnx');
    expect(selectEngine(config({ backend: 'auto', device: 'cpu' }), 'tfjs-node', undefined, model)).to.include({ engine: 'onnx', reason: "device set: the graph trainer's settings" });
    expect(selectEngine(config({ backend: 'auto', microBatch: 8 }), 'tfjs-node', undefined, model).engine).to.equal('onnx');
  });

  it('a run with backend auto on this install (no tfjs-node) trains on the graph trainer and records why in report.json', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-engine-'));
    try {
      const out = path.join(dir, 'run');
      const lines: string[] = [];
      const result = await train(parseTrainConfig(tinyTrainConfig(out, { backend: 'auto' }), 'spec'), { log: (line) => lines.push(line) });
      expect([result.backend, result.engineSelection.engine, result.device?.provider]).to.deep.equal(['onnx', 'onnx', 'cpu']);
      const report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as { engineSelection: unknown };
      expect(report.engineSelection).to.deep.equal(result.engineSelection);
      expect(lines).to.include(`engine: the graph trainer (onnxruntime): ${result.engineSelection.reason}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
