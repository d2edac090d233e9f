/**
 * `dml train`'s flags that replace config fields, checked before any work: `--micro-batch` (the onnx
 * backend's micro-batches) must be a positive integer and needs the onnx backend; the files it reads
 * must be regular files.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runCliCaptured } from '../helpers/run-cli.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

describe('dml train flags', function () {
  this.timeout(60_000);
  let dir: string;
  let config: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-train-flags-'));
    config = path.join(dir, 'train.json');
    writeFileSync(config, JSON.stringify(tinyTrainConfig(path.join(dir, 'run'))));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('--micro-batch: a positive integer, for the onnx backend only; nothing is written when refused', async () => {
    const zero = await runCliCaptured(['train', '--config', config, '--micro-batch', '0']);
    expect([zero.code, zero.stderr]).to.deep.equal([2, 'dml: Expected a positive integer for --micro-batch but received "0"\n']);
    const tfjs = await runCliCaptured(['train', '--config', config, '--micro-batch', '8']);
    expect(tfjs.code).to.equal(2);
    expect(tfjs.stderr).to.equal(`dml: ${config}: microBatch: splits the onnx backend's batches; with backend cpu remove it (got 8)\n`);
    // Taken on the onnx backend: the run goes on to open its device (CUDA's provider is not installed here).
    const onnx = await runCliCaptured(['train', '--config', config, '--micro-batch', '8', '--backend', 'onnx', '--device', 'cuda']);
    expect(onnx.stderr).to.match(/Cannot create an onnxruntime session for network .* \(device cuda\)/);
    expect(existsSync(path.join(dir, 'run'))).to.equal(false);
  });

  it('a FIFO as --config or model.preprocessorConfig is one line at once (it used to block with no output)', async () => {
    const pipe = path.join(dir, 'pipe');
    expect(spawnSync('mkfifo', [pipe]).status).to.equal(0);
    const fromPipe = await runCliCaptured(['train', '--config', pipe]);
    expect([fromPipe.code, fromPipe.stderr]).to.deep.equal([2, `dml: Cannot read config ${pipe}: a FIFO (named pipe), not a regular file\n`]);
    const onnx = path.join(dir, 'onnx.json');
    const model = { kind: 'onnx', path: 'spec/fixtures/graph-trainer/resnet-triplet/initial.onnx', preprocessorConfig: pipe, output: '/block2/relu_1/Relu_output_0', head: { embeddingDim: 8 } };
    writeFileSync(onnx, JSON.stringify(tinyTrainConfig(path.join(dir, 'onnx-run'), { backend: 'onnx', device: 'cpu', model, data: { dataset: 'folder:data/default', trainClasses: 'bag,coat' } })));
    const beside = await runCliCaptured(['train', '--config', onnx]);
    expect([beside.code, beside.stderr]).to.deep.equal([2, `dml: Cannot read preprocessor config ${pipe}: a FIFO (named pipe), not a regular file\n`]);
    expect(existsSync(path.join(dir, 'onnx-run'))).to.equal(false);
  });
});
