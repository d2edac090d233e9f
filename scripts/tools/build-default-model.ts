/**
 * @file Builds the embedded default of `npm start`: `models/default.onnx` and the image folder
 * `data/default/`, from the Fashion-MNIST IDX files of the Debian package `dataset-fashion-mnist`
 * (or any copy: pass its folder as the first argument). Run once by a developer; both outputs are
 * committed, so users and CI never need the dataset.
 *
 *   apt-get install -y dataset-fashion-mnist
 *   npx tsx scripts/tools/build-default-model.ts [/usr/share/datasets/fashion-mnist]
 *
 * The model is PCA: it centres a 28x28 greyscale image (pixels in [0, 1]) with the mean training image,
 * projects it on the top 64 principal directions of the 60,000 training images, and L2-normalises.
 * The image folder holds 60 test images per class (600 PNGs), so the default evaluation uses images the
 * model never saw. The principal subspace is found by subspace iteration on the 784 x 784 covariance;
 * cosine similarity is invariant to rotations inside that subspace, so no eigen-sorting is needed.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { readIdxFile } from '../../lib/data/idx-reader.js';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { DML_METADATA_KEYS } from '../../lib/onnx/dml-metadata.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { Rng } from '../../lib/util/rng.js';

const CLASS_NAMES = ['t-shirt_top', 'trouser', 'pullover', 'dress', 'coat', 'sandal', 'shirt', 'sneaker', 'bag', 'ankle_boot'];
const DIM = 64;
const PIXELS = 784;
const IMAGES_PER_CLASS = 60;

async function main(): Promise<void> {
  const root = process.argv[2] ?? '/usr/share/datasets/fashion-mnist';
  const train = await readIdxFile(path.join(root, 'train-images-idx3-ubyte.gz'));
  const testImages = await readIdxFile(path.join(root, 't10k-images-idx3-ubyte.gz'));
  const testLabels = await readIdxFile(path.join(root, 't10k-labels-idx1-ubyte.gz'));
  const n = train.dims[0] as number;

  // Mean image and covariance (float64) of the training images scaled to [0, 1].
  const mean = new Float64Array(PIXELS);
  for (let i = 0; i < n * PIXELS; i++) mean[i % PIXELS] = (mean[i % PIXELS] as number) + (train.data[i] as number) / 255 / n;
  const cov = new Float64Array(PIXELS * PIXELS);
  const row = new Float64Array(PIXELS);
  for (let s = 0; s < n; s++) {
    for (let j = 0; j < PIXELS; j++) row[j] = (train.data[s * PIXELS + j] as number) / 255 - (mean[j] as number);
    for (let a = 0; a < PIXELS; a++) {
      const ra = row[a] as number;
      if (ra === 0) continue;
      const base = a * PIXELS;
      for (let b = a; b < PIXELS; b++) cov[base + b] = (cov[base + b] as number) + ra * (row[b] as number);
    }
  }
  for (let a = 0; a < PIXELS; a++) for (let b = 0; b < a; b++) cov[a * PIXELS + b] = cov[b * PIXELS + a] as number;

  // Subspace iteration: Q <- orthonormalise(C Q), 60 rounds from a seeded random start.
  const rng = new Rng(0);
  let q = Float64Array.from({ length: PIXELS * DIM }, () => rng.nextGaussian());
  orthonormaliseColumns(q);
  for (let it = 0; it < 60; it++) {
    const z = new Float64Array(PIXELS * DIM);
    for (let a = 0; a < PIXELS; a++) {
      for (let b = 0; b < PIXELS; b++) {
        const c = cov[a * PIXELS + b] as number;
        for (let k = 0; k < DIM; k++) z[a * DIM + k] = (z[a * DIM + k] as number) + c * (q[b * DIM + k] as number);
      }
    }
    orthonormaliseColumns(z);
    q = z;
  }

  // Graph: x[batch,1,28,28] -> Flatten -> Sub(mean) -> MatMul(Q) -> LpNormalization -> embedding[batch,64].
  const model = encodeModel({
    graphName: 'fashion_mnist_pca64',
    inputs: [tensorValueInfo('image', 'float32', ['batch', 1, 28, 28])],
    outputs: [tensorValueInfo('embedding', 'float32', ['batch', DIM])],
    initializers: [floatTensor('mean', [PIXELS], Float32Array.from(mean)), floatTensor('projection', [PIXELS, DIM], Float32Array.from(q))],
    nodes: [
      node('Flatten', ['image'], ['flat'], { axis: { i: 1 } }),
      node('Sub', ['flat', 'mean'], ['centred']),
      node('MatMul', ['centred', 'projection'], ['projected']),
      node('LpNormalization', ['projected'], ['embedding'], { axis: { i: 1 }, p: { i: 2 } }),
    ],
    metadata: {
      [DML_METADATA_KEYS.preprocessing]: JSON.stringify({ height: 28, width: 28, resizeShorter: 28, channels: 1, layout: 'NCHW', mean: [0], std: [1] }),
      [DML_METADATA_KEYS.embeddingDim]: String(DIM),
      [DML_METADATA_KEYS.distance]: 'cosine',
    },
    docString: 'PCA-64 of the Fashion-MNIST training images (dmlkit scripts/tools/build-default-model.ts)',
  });
  await writeFileAtomic('models/default.onnx', model);

  // 60 test images per class as PNG, first occurrences in file order.
  await rm('data/default', { recursive: true, force: true });
  const taken = new Array<number>(10).fill(0);
  for (let i = 0; i < (testLabels.dims[0] as number); i++) {
    const label = testLabels.data[i] as number;
    if ((taken[label] as number) >= IMAGES_PER_CLASS) continue;
    taken[label] = (taken[label] as number) + 1;
    const dir = path.join('data/default', CLASS_NAMES[label] as string);
    await mkdir(dir, { recursive: true });
    const pixels = Buffer.from(testImages.data.subarray(i * PIXELS, (i + 1) * PIXELS));
    await sharp(pixels, { raw: { width: 28, height: 28, channels: 1 } })
      .png({ compressionLevel: 9 })
      .toFile(path.join(dir, `t10k-${String(i).padStart(5, '0')}.png`));
  }
  console.log(`wrote models/default.onnx (${model.length} bytes) and data/default (${taken.reduce((a, b) => a + b, 0)} images)`);
}

/** Modified Gram-Schmidt on the columns of a row-major PIXELS x DIM matrix, in place. */
function orthonormaliseColumns(m: Float64Array): void {
  for (let k = 0; k < DIM; k++) {
    for (let j = 0; j < k; j++) {
      let dot = 0;
      for (let r = 0; r < PIXELS; r++) dot += (m[r * DIM + k] as number) * (m[r * DIM + j] as number);
      for (let r = 0; r < PIXELS; r++) m[r * DIM + k] = (m[r * DIM + k] as number) - dot * (m[r * DIM + j] as number);
    }
    let norm = 0;
    for (let r = 0; r < PIXELS; r++) norm += (m[r * DIM + k] as number) ** 2;
    norm = Math.sqrt(norm);
    for (let r = 0; r < PIXELS; r++) m[r * DIM + k] = (m[r * DIM + k] as number) / norm;
  }
}

await main();
