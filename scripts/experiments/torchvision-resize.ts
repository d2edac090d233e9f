/**
 * How close `dml eval`'s default preprocessing comes to torchvision's eval transform on a torchvision
 * export that says nothing of its preprocessing, with and without `--resample bilinear`:
 *
 *   npx tsx scripts/experiments/torchvision-resize.ts [image ...]
 *
 * Runs scripts/reference/torchvision_resize_reference.py (Debian's python3-torch and torchvision) for a
 * random-weight ResNet-18 and the images (default: the 13 hub and torch fixture images, 29 x 23
 * to 121 x 40 px, and one of each class of data/default, 28 x 28), then embeds them with OnnxEmbedder as dml eval does (the
 * defaults: shorter side 256, crop 224, ImageNet statistics) with sharp's linear resize and with
 * Pillow's bilinear one, and prints the smallest and mean cosine to PyTorch's embeddings. The numbers
 * of docs/models.md ("Resizing as Pillow does") come from here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import type { ResampleFilter } from '../../lib/image/preprocessing.js';

const given = process.argv.slice(2);
const images =
  given.length > 0
    ? given
    : [
        ...['a', 'b', 'c'].flatMap((d) => readdirSync(`spec/fixtures/hub/images/${d}`).map((f) => `spec/fixtures/hub/images/${d}/${f}`)),
        ...readdirSync('spec/fixtures/torch/images').map((f) => `spec/fixtures/torch/images/${f}`),
        ...readdirSync('data/default').map((d) => `data/default/${d}/${readdirSync(`data/default/${d}`).sort()[0]}`),
      ].map((f) => path.resolve(f));
const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-torchvision-resize-'));
try {
  execFileSync('/usr/bin/python3', ['scripts/reference/torchvision_resize_reference.py', dir, ...images], { stdio: 'inherit' });
  const reference = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8')) as { torch: string; embeddings: Record<string, number[]> };
  for (const resample of [undefined, 'bilinear'] as Array<ResampleFilter | undefined>) {
    const embedder = await OnnxEmbedder.open(path.join(dir, 'model.onnx'), { device: 'cpu', ...(resample ? { preprocessing: { resample } } : {}) });
    const items = images.map((file, i) => ({ id: file, label: String(i), source: { kind: 'file' as const, path: file }, split: 'test', isQuery: true, isGallery: true }));
    const { set } = await embedder.embedItems(items, { workers: 0 });
    await embedder.release();
    const cosines = set.ids.map((id, r) => {
      const want = reference.embeddings[id] as number[];
      let dot = 0;
      for (let j = 0; j < set.dim; j++) dot += (set.vectors[r * set.dim + j] as number) * (want[j] as number);
      return dot;
    });
    console.log(`${resample === undefined ? "default (sharp's linear resize)" : `--resample ${resample} (Pillow's)`}: min cosine ${Math.min(...cosines).toFixed(5)}, mean ${(cosines.reduce((a, b) => a + b, 0) / cosines.length).toFixed(5)} over ${cosines.length} images (torch ${reference.torch})`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
