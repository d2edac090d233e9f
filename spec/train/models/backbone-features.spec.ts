import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { ManifestItem } from '../../../lib/data/manifest.js';
import { OnnxEmbedder } from '../../../lib/embed/embedder.js';
import type { EmbeddingSet } from '../../../lib/embed/embedding-set.js';
import { computeBackboneFeatures } from '../../../lib/train/models/backbone-features.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

const FIXTURES = path.resolve('spec/fixtures/torch');
const names = readdirSync(path.join(FIXTURES, 'images')).filter((f) => f.endsWith('.png')).sort();
const items: ManifestItem[] = names.map((name, i) => ({
  id: name,
  source: { kind: 'file', path: path.join(FIXTURES, 'images', name) },
  label: String(i % 2),
  split: 'train',
  isQuery: false,
  isGallery: false,
}));
const augmentation = { scale: [0.3, 1] as [number, number], ratio: [0.75, 1.333] as [number, number], flipProbability: 0.5 };

function unitRows(set: EmbeddingSet): void {
  for (let r = 0; r < set.count; r++) {
    const row = set.vectors.subarray(r * set.dim, (r + 1) * set.dim);
    expect(Math.hypot(...Array.from(row))).to.be.closeTo(1, 1e-5);
  }
}

describe('train/models: backbone features from an ONNX backbone', () => {
  let embedder: OnnxEmbedder;
  let dir: string;
  before(async () => {
    embedder = await OnnxEmbedder.open(path.join(FIXTURES, 'nchw_dynamic.onnx'), { device: 'cpu', batchSize: 3, preprocessing: { resizeShorter: 32 } });
  });
  after(async () => {
    await embedder.release();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-backbone-features-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('computes the plain view and seeded augmented views, caches them, and reproduces them from the seed', async () => {
    const first = await computeBackboneFeatures(embedder, items, 'hash-1', { cacheDir: dir, augmentedViews: 2, augmentation, seed: 4 });
    expect(first.fromCache).to.deep.equal([false, false, false]);
    expect(first.views).to.have.length(3);
    for (const view of first.views) {
      expect(view.ids).to.deep.equal(names);
      expect(view.labels).to.deep.equal(items.map((it) => it.label));
      expect(view.dim).to.equal(16);
      unitRows(view);
    }
    const [plain, v1, v2] = first.views as [EmbeddingSet, EmbeddingSet, EmbeddingSet];
    expect(v1.vectors).not.to.deep.equal(plain.vectors);
    expect(v2.vectors).not.to.deep.equal(v1.vectors);

    const cached = await computeBackboneFeatures(embedder, items, 'hash-1', { cacheDir: dir, augmentedViews: 2, augmentation, seed: 4 });
    expect(cached.fromCache).to.deep.equal([true, true, true]);
    cached.views.forEach((v, i) => expect(v.vectors).to.deep.equal(first.views[i]?.vectors));

    // Without the cache, the same seed gives the same views (view 2 does not depend on view 1 being computed).
    const fresh = await computeBackboneFeatures(embedder, items, 'hash-1', { augmentedViews: 2, augmentation, seed: 4 });
    expect(fresh.fromCache).to.deep.equal([false, false, false]);
    expect(fresh.views[2]?.vectors).to.deep.equal(v2.vectors);
    const otherSeed = await computeBackboneFeatures(embedder, items, 'hash-1', { cacheDir: dir, augmentedViews: 1, augmentation, seed: 5 });
    expect(otherSeed.fromCache).to.deep.equal([true, false]);
    expect(otherSeed.views[1]?.vectors).not.to.deep.equal(v1.vectors);
  });

  it('names bad options', async () => {
    await expectDmlError(
      computeBackboneFeatures(embedder, items, 'h', { augmentedViews: 1 }),
      'E_ARG',
      'Expected a train augmentation when augmentedViews > 0 for augmentation but received undefined',
    );
    await expectDmlError(computeBackboneFeatures(embedder, items, 'h', { augmentedViews: -1 }), 'E_ARG', 'Expected an integer >= 0 for augmentedViews but received -1');
    await expectDmlError(
      computeBackboneFeatures(embedder, items, 'h', { augmentedViews: 1, augmentation: { ...augmentation, flipProbability: 2 } }),
      'E_ARG',
      'Expected a number in [0, 1] for augmentation.flipProbability but received 2',
    );
  });
});
