/**
 * @file Where the files dmlkit ships lie, wherever it is installed (a project's node_modules, a clone):
 * the default model (`models/default.onnx`, PCA-64 of Fashion-MNIST, no metric learning) and the
 * default image set (`data/default/`, 600 Fashion-MNIST test images in ten class folders), so a
 * program can evaluate and embed something without downloading anything.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** The folder holding dmlkit's package.json (the package's own, by its `./package.json` export). */
export function packageRoot(): string {
  return path.dirname(require.resolve('dmlkit/package.json'));
}

/** The absolute path of the shipped default model, `models/default.onnx` (64-dimensional embeddings of 28 x 28 grey images). */
export function defaultModelPath(): string {
  return path.join(packageRoot(), 'models', 'default.onnx');
}

/** The absolute path of the shipped default image set, `data/default/` (one folder per class: `folder:<this>` as a dataset). */
export function defaultDataPath(): string {
  return path.join(packageRoot(), 'data', 'default');
}
