/**
 * @file The front door stays light: `dml --help` loads none of the heavy packages, `dml eval` (on .npy
 * embeddings) and `import 'dmlkit'` never load TensorFlow.js, and the training and export entry points
 * do (the probe's positive control); `dml compare` of training runs loads neither TensorFlow.js nor
 * onnxruntime. Each case runs in a fresh process (spec/helpers/loaded-packages.ts),
 * since this one has loaded everything already. Also: a DmlError thrown by a command's lazily imported
 * work is still reported as one `dml: <message>` line (instanceof holds across module copies).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { writeNpy } from '../../lib/embed/npy.js';
import { DmlError } from '../../lib/errors.js';
import { HttpError } from '../../lib/serve/http-errors.js';
import { explainMissingTensorflow } from '../../lib/util/optional-deps.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Probe {
  code: number | null;
  loaded: string[];
  tfEngine: boolean;
}

function probe(...args: string[]): Probe {
  const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(root, 'spec/helpers/loaded-packages.ts'), ...args], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1) as string) as Probe;
}

describe('lazy loading of the CLI and the entry points', function () {
  this.timeout(60_000);
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-lazy-'));
    await writeNpy(path.join(dir, 'q.npy'), Float32Array.from([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9]), [4, 2]);
    await writeNpy(path.join(dir, 'ql.npy'), Int32Array.from([0, 0, 1, 1]), [4]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('dml --help loads no heavy package', () => {
    expect(probe('cli', '--help')).to.deep.equal({ code: 0, loaded: [], tfEngine: false });
  });

  it('dml eval runs without TensorFlow.js', () => {
    const result = probe('cli', 'eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy'), '--cluster-counts', '1x', '--k', '1,2');
    expect(result.code).to.equal(0);
    expect(result.loaded).to.include('onnxruntime-node');
    expect(result.loaded).not.to.include('@tensorflow');
    expect(result.tfEngine).to.equal(false);
  });

  it('dml compare of training runs loads neither TensorFlow.js nor onnxruntime', () => {
    const runs = ['a', 'b'].map((name) => {
      const run = path.join(dir, name);
      mkdirSync(run);
      writeFileSync(path.join(run, 'config.json'), JSON.stringify({ steps: 1, sampler: { batchSize: 2 } }));
      writeFileSync(path.join(run, 'log.jsonl'), `${JSON.stringify({ type: 'step', epoch: 1, step: 1, globalStep: 1, loss: 0.5, validCount: 2, totalCount: 2, learningRate: 0.1 })}\n`);
      return run;
    });
    const result = probe('cli', 'compare', ...runs, '--out', path.join(dir, 'compared'));
    expect(result.code).to.equal(0);
    expect(result.loaded).not.to.include('@tensorflow');
    expect(result.loaded).not.to.include('onnxruntime-node');
    expect(result.tfEngine).to.equal(false);
  });

  it("a DmlError from a command's lazily loaded work is one 'dml:' line with exit code 2", () => {
    const result = probe('cli', 'eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy'), '--k', '1,two');
    expect(result.code).to.equal(2);
  });

  it("import 'dmlkit' loads no TensorFlow.js and no fastify; dmlkit/train and dmlkit/export load TensorFlow.js", () => {
    const core = probe('import', path.join(root, 'lib/index.ts'));
    expect(core.loaded).not.to.include('@tensorflow');
    expect(core.loaded).not.to.include('fastify');
    expect(core.tfEngine).to.equal(false);
    for (const entry of ['lib/train.ts', 'lib/export.ts']) {
      const heavy = probe('import', path.join(root, entry));
      expect(heavy.loaded, entry).to.include('@tensorflow');
      expect(heavy.tfEngine, entry).to.equal(true);
    }
    expect(probe('import', path.join(root, 'lib/serve.ts')).loaded).to.include('fastify');
  });

  it('instanceof DmlError holds for a DmlError of another copy of the module, not for other errors', () => {
    const fromOtherCopy = Object.assign(new Error('x'), { [Symbol.for('dmlkit.DmlError')]: true, code: 'E_ARG' });
    expect(fromOtherCopy instanceof DmlError).to.equal(true);
    expect(new Error('x') instanceof DmlError).to.equal(false);
    expect(new DmlError('E_IO', 'x') instanceof DmlError).to.equal(true);
    // Subclasses keep the prototype check.
    expect(new DmlError('E_IO', 'x') instanceof HttpError).to.equal(false);
    expect(new HttpError(404, 'E_NOT_FOUND', 'x') instanceof DmlError).to.equal(true);
  });
});

describe('TensorFlow.js as an optional peer dependency', () => {
  it('a missing @tensorflow package becomes one E_NOT_FOUND line naming what to install; other errors pass through', () => {
    const missing = Object.assign(new Error("Cannot find package '@tensorflow/tfjs' imported from /x/dist/lib/cli/train-run.js"), { code: 'ERR_MODULE_NOT_FOUND' });
    const explained = explainMissingTensorflow(missing, 'dml train') as DmlError;
    expect(explained).to.be.instanceOf(DmlError);
    expect(explained.code).to.equal('E_NOT_FOUND');
    expect(explained.message).to.equal(
      'dml train needs TensorFlow.js, an optional peer dependency of dmlkit that is not installed: npm install @tensorflow/tfjs@^4.22.0 @tensorflow/tfjs-backend-cpu@^4.22.0 @tensorflow/tfjs-backend-wasm@^4.22.0',
    );
    const other = Object.assign(new Error("Cannot find package 'sharp'"), { code: 'ERR_MODULE_NOT_FOUND' });
    expect(explainMissingTensorflow(other, 'dml train')).to.equal(other);
  });
});
