/**
 * @file Runs the README's "Library" example as a user would (top-level await, `import ... from
 * 'dmlkit'`), with `dmlkit` pointed at this checkout's lib/index.ts, and checks what it prints; and
 * checks the façade's results against the parts it is built on.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { embedImages, evaluate } from '../lib/facade.js';
import { OnnxEmbedder } from '../lib/embed/embedder.js';
import { expectDmlError } from './helpers/expect-dml-error.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = path.join(root, 'models/default.onnx');

describe('README: Library', function () {
  this.timeout(60_000);

  it('the example runs and prints the metrics and the embedded set', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const code = /### Library\n\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(code, 'a js block under ### Library').to.be.a('string');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-readme-'));
    try {
      const file = path.join(dir, 'example.mts');
      writeFileSync(file, (code as string).replace("from 'dmlkit'", `from ${JSON.stringify(path.join(root, 'lib/index.ts'))}`));
      // Run from another folder: the example finds the shipped model and images wherever it runs.
      const out = execFileSync(process.execPath, ['--import', pathToFileURL(path.join(root, 'node_modules/tsx/dist/loader.mjs')).href, file], { cwd: dir, encoding: 'utf8' }).trim().split('\n');
      expect(out[0]).to.match(/^R@1 0\.\d+, MAP@R 0\.\d+, NMI\+ 0\.\d+$/);
      expect(out[1]).to.equal("2 64 [ 't10k-00000.png', '#1' ]");
      expect(out[2]).to.equal('1 1');
      expect(out[3]).to.equal("[ 't10k-00000.png' ]");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('embedImages gives the vectors the embedder gives for the same files, bytes or paths alike', async () => {
    const files = ['data/default/bag/t10k-00030.png', 'data/default/coat/t10k-00006.png'].map((f) => path.join(root, f));
    const embedder = await OnnxEmbedder.open(MODEL, { device: 'cpu' });
    const items = files.map((f, i) => ({ id: String(i), label: 'x', source: { kind: 'file' as const, path: f }, split: 'test', isQuery: true, isGallery: true }));
    const { set: expected } = await embedder.embedItems(items, { workers: 0 });
    await embedder.release();
    const byPath = await embedImages(MODEL, files, { device: 'cpu' });
    const byBytes = await embedImages(MODEL, files.map((f) => readFileSync(f)), { device: 'cpu' });
    expect(Array.from(byPath.vectors)).to.deep.equal(Array.from(expected.vectors));
    expect(Array.from(byBytes.vectors)).to.deep.equal(Array.from(expected.vectors));
    expect(byBytes.ids).to.deep.equal(['#0', '#1']);
    await expectDmlError(embedImages(MODEL, [path.join(root, 'nowhere.png')]), 'E_NOT_FOUND', /nowhere\.png: no such file \(expected an existing image file\)/);
    await expectDmlError(embedImages(MODEL, [Buffer.from('not an image')]), 'E_IMAGE', /#0/);
    await expectDmlError(embedImages(MODEL, []), 'E_ARG', /images/);
  });

  it('evaluate fills the CLI defaults and names a missing model or dataset', async () => {
    const report = await evaluate({ model: MODEL, data: `folder:${path.join(root, 'data/default')}`, device: 'cpu', clusterCounts: ['1x'], workers: 0 });
    expect(report.parameters.ks).to.deep.equal([1, 2, 4, 8]);
    expect(report.parameters.kmeans).to.include({ seed: 0, init: 'k-means++', maxIterations: 100 });
    expect(report.metrics.queryCount).to.equal(600);
    await expectDmlError(evaluate({ model: MODEL, data: '' }), 'E_ARG', /data/);
    await expectDmlError(evaluate({ model: path.join(root, 'none.onnx'), data: `folder:${path.join(root, 'data/default')}` }), 'E_NOT_FOUND', /none\.onnx/);
  });
});
