/**
 * @file The runtime entry of `dmlkit/export` (package.json maps its types to export.d.ts and its code here). It
 * loads export.js dynamically, so a missing TensorFlow.js (an optional peer dependency) becomes the same
 * one-line E_NOT_FOUND error naming what to install as `dml export` gives, instead of Node's raw
 * module-not-found error. Its exports are export.ts's values, one by one (a spec keeps the lists equal).
 */
import { explainMissingTensorflow } from './util/optional-deps.js';

let api: typeof import('./export.js');
try {
  api = await import('./export.js');
} catch (err) {
  throw explainMissingTensorflow(err, "import 'dmlkit/export'");
}

export const {
  PARITY_TOLERANCE,
  composeBackboneAndHead,
  convertLayersModel,
  exportCheckpoint,
  exportEmbedder,
  registerLayerConverter,
  supportedLayerClasses,
} = api;
