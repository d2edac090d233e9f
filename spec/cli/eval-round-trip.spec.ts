/**
 * @file What `dml eval --save-embeddings` writes, `dml eval --query-labels` reads back: the .npy with
 * its .json sidecar give the same metrics as the model they came from (the ids too, so the examples
 * name the items); a saved set whose rows have separate query and gallery roles is evaluated with that
 * protocol, as evaluateEmbeddings on the two subsets; a sidecar of another set is refused.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { saveEmbeddingSet } from '../../lib/embed/embedding-files.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import type { SingleRunReport } from '../../lib/report/report.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { makeTempDir } from '../image/image-fixtures.js';

describe('dml eval: saved embeddings read back', function () {
  this.timeout(60_000);
  let tmp: string;
  before(() => {
    tmp = makeTempDir('dml-round-trip-');
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const readReport = (file: string): SingleRunReport => JSON.parse(readFileSync(file, 'utf8')) as SingleRunReport;

  it('--query-labels <saved>.json gives the metrics of the model the embeddings came from', async () => {
    const saved = path.join(tmp, 'default.npy');
    let res = await runCliCaptured(['--quiet', 'eval', 'models/default.onnx', '--data', 'folder:data/default', '--cluster-counts', '1x', '--workers', '0', '--save-embeddings', saved, '--json', path.join(tmp, 'model.json')]);
    expect(res.code, res.stderr).to.equal(0);
    res = await runCliCaptured(['--quiet', 'eval', '--query-embeddings', saved, '--query-labels', path.join(tmp, 'default.json'), '--cluster-counts', '1x', '--json', path.join(tmp, 'npy.json')]);
    expect(res.code, res.stderr).to.equal(0);
    const [model, npy] = [readReport(path.join(tmp, 'model.json')), readReport(path.join(tmp, 'npy.json'))];
    expect(npy.metrics.recall).to.deep.equal(model.metrics.recall);
    expect([npy.metrics.mapAtR, npy.metrics.nmi, npy.metrics.queryCount]).to.deep.equal([model.metrics.mapAtR, model.metrics.nmi, 600]);
    expect(npy.examples.map((e) => e.query.id)).to.deep.equal(model.examples.map((e) => e.query.id));
    expect(npy.dataset.protocol).to.equal('query set = gallery set');
  });

  it('a saved set with separate query and gallery rows is evaluated with that protocol; a sidecar of another set is refused', async () => {
    const vectors = Float32Array.from([1, 0, 0.8, 0.6, 0, 1, 0.6, 0.8, 0.6, -0.8]);
    const set = { vectors, count: 5, dim: 2, ids: ['q1', 'q2', 'g1', 'g2', 'g3'], labels: ['a', 'b', 'b', 'a', 'a'] };
    await saveEmbeddingSet(path.join(tmp, 'split'), set, { roles: ['query', 'query', 'gallery', 'gallery', 'query+gallery'] });
    const res = await runCliCaptured(['--quiet', 'eval', '--query-embeddings', path.join(tmp, 'split.npy'), '--query-labels', path.join(tmp, 'split.json'), '--k', '1', '--cluster-counts', '1x', '--json', path.join(tmp, 'split-report.json')]);
    expect(res.code, res.stderr).to.equal(0);
    const report = readReport(path.join(tmp, 'split-report.json'));
    const pick = (rows: number[]) => ({ vectors: Float32Array.from(rows.flatMap((r) => [vectors[2 * r] as number, vectors[2 * r + 1] as number])), count: rows.length, dim: 2, ids: rows.map((r) => set.ids[r] as string), labels: rows.map((r) => set.labels[r] as string) });
    const expected = await evaluateEmbeddings(pick([0, 1, 4]), pick([2, 3, 4]), { ks: [1], clusterCounts: ['1x'] });
    expect([report.dataset.queryCount, report.dataset.galleryCount]).to.deep.equal([3, 3]);
    expect(report.metrics.recall).to.deep.equal(expected.metrics.recall);
    expect(report.metrics.mapAtR).to.equal(expected.metrics.mapAtR);
    expect(report.dataset.protocol).to.equal(`the query and gallery rows of ${path.join(tmp, 'split.json')}`);
    const wrong = await runCliCaptured(['eval', '--query-embeddings', path.join(tmp, 'default.npy'), '--query-labels', path.join(tmp, 'split.json')]);
    expect(wrong.stderr).to.equal(`dml: ${path.join(tmp, 'split.json')} holds 5 labels but ${path.join(tmp, 'default.npy')} holds 600 embeddings (expected the .json written beside that .npy)\n`);
  });
});
