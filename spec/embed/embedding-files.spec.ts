import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import { loadEmbeddingSet, saveEmbeddingSet } from '../../lib/embed/embedding-files.js';
import { writeNpy } from '../../lib/embed/npy.js';

describe('embed/embedding-files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-store-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('round-trips vectors, ids, labels and provenance, leaving no temporary files', async () => {
    const set = { vectors: new Float32Array([0.6, 0.8, 1, 0]), count: 2, dim: 2, ids: ['a', 'b'], labels: ['x', 'y'] };
    await saveEmbeddingSet(path.join(dir, 'q'), set, { modelSha256: 'abc' });
    const back = await loadEmbeddingSet(path.join(dir, 'q'));
    expect(Array.from(back.set.vectors)).to.deep.equal(Array.from(set.vectors));
    expect(back.set).to.deep.include({ count: 2, dim: 2, ids: ['a', 'b'], labels: ['x', 'y'] });
    expect(back.provenance.modelSha256).to.equal('abc');
    expect(readdirSync(dir).sort()).to.deep.equal(['q.json', 'q.npy']);
  });

  it('detects a vectors file that does not match its sidecar', async () => {
    const set = { vectors: new Float32Array([1, 0, 0, 1]), count: 2, dim: 2, ids: ['a', 'b'], labels: ['x', 'y'] };
    await saveEmbeddingSet(path.join(dir, 'q'), set);
    await writeNpy(path.join(dir, 'q.npy'), new Float32Array(6), [3, 2]);
    try {
      await loadEmbeddingSet(path.join(dir, 'q'));
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(DmlError);
      expect((err as DmlError).message).to.match(/q\.npy holds 3 x 2 vectors but .*q\.json describes 2 x 2/);
    }
  });

  it('rejects a sidecar of another format', async () => {
    writeFileSync(path.join(dir, 'z.json'), JSON.stringify({ format: 'other' }));
    await writeNpy(path.join(dir, 'z.npy'), new Float32Array(2), [1, 2]);
    try {
      await loadEmbeddingSet(path.join(dir, 'z'));
      expect.fail('should throw');
    } catch (err) {
      expect((err as DmlError).message).to.match(/expected format dmlkit\.embeddings\/1/);
    }
  });
});
