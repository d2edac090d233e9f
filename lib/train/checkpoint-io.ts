/**
 * @file Training checkpoints: a folder holding a LayersModel (topology + weights, in the TensorFlow.js
 * format), optionally the optimizer's state and an arbitrary JSON state blob (epoch, batch index,
 * sampler seed, metrics so far: the training loop decides).
 *
 * Layout: `model.json` + `weights.bin` (tfjs layers format, loadable by any tfjs, see
 * models/tfjs-files.ts), or `model.onnx` for a network the graph trainer trains as ONNX
 * (`model.kind: "onnx"`, read with {@link loadOnnxCheckpoint}), `optimizer.json` + `optimizer.bin` (class name, config and the
 * `optimizer.getWeights()` tensors in tfjs's weight encoding), `loss-optimizer.json` + `loss-optimizer.bin`
 * (the same for the optimiser of the loss's own parameters, lib/train/loss-optimizer.ts, with either
 * kind of model), `arrays.json` + `arrays.bin` (named float32 arrays: the graph trainer's optimiser
 * slots, the loss's parameters), `state.json`, and `checkpoint.json`
 * listing every file with its size and SHA-256, which a load verifies.
 *
 * Atomicity: everything is serialised in memory first, then written into a temporary folder beside
 * the target, each file fsynced, the folder fsynced, and renamed into place. An existing checkpoint is
 * first renamed to `.<name>.previous` and removed only after the new one is in place, so at every
 * moment the target is either absent, the complete old checkpoint or the complete new one; never a
 * half-written one. If a crash falls between the two renames, the target is absent and the old
 * checkpoint waits at `.<name>.previous`; a load says so. A failed save removes its temporary folder
 * and leaves the previous checkpoint where it was.
 *
 * Optimizer state is restored by position (tfjs's optimizers match their slots to variables by the
 * order of the gradients they are given), so the model must be rebuilt with the same architecture
 * and trained with the same variable order. Restoring creates new slot variables; call it on a fresh
 * optimizer.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { readRegular } from '../util/regular-file.js';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { DmlError, invalidParameterError } from '../errors.js';
import { sha256 } from '../util/hash.js';
import { layersModelFiles, layersModelFromArtifacts, parseModelJson, WEIGHTS_FILE } from './models/tfjs-files.js';
import { setOptimizerWeights } from './optimizer.js';

/** Format tag of checkpoint.json. */
export const CHECKPOINT_FORMAT = 'dmlkit.checkpoint/1';

const MANIFEST = 'checkpoint.json';
const MODEL_JSON = 'model.json';
const OPTIMIZER_JSON = 'optimizer.json';
const OPTIMIZER_BIN = 'optimizer.bin';
const LOSS_OPTIMIZER_JSON = 'loss-optimizer.json';
const LOSS_OPTIMIZER_BIN = 'loss-optimizer.bin';
const STATE_JSON = 'state.json';
const ARRAYS_JSON = 'arrays.json';
const ARRAYS_BIN = 'arrays.bin';
const MODEL_ONNX = 'model.onnx';

/** What a checkpoint holds. */
export interface CheckpointContents {
  /** The model: a TensorFlow.js model, or an ONNX model's bytes (a network the graph trainer trains as ONNX). */
  model: tf.LayersModel | Uint8Array;
  optimizer?: tf.Optimizer;
  /** The optimiser of the loss's own parameters (restored by position). */
  lossOptimizer?: tf.Optimizer | undefined;
  /** Named float32 arrays (the graph trainer's optimiser slots, the loss's parameters). */
  arrays?: ReadonlyMap<string, Float32Array>;
  /** Any JSON-serialisable value. */
  state?: unknown;
}

/** A loaded checkpoint. `optimizer` and `state` are present when the checkpoint has them. */
export interface LoadedCheckpoint {
  model: tf.LayersModel;
  optimizer?: tf.Optimizer;
  /** The saved state of the loss parameters' optimiser, to restore with {@link restoreOptimizerState}. */
  lossOptimizer?: OptimizerStateFiles;
  arrays?: Map<string, Float32Array>;
  state?: unknown;
}

/** The serialised state of an optimizer. */
export interface OptimizerStateFiles {
  /** Text of optimizer.json: `{ className, config, weights: [{name, shape, dtype}] }`. */
  json: string;
  /** The tensors of `optimizer.getWeights()`, concatenated in tfjs's weight encoding. */
  data: Uint8Array;
}

interface OptimizerJson {
  className: string;
  config: tf.serialization.ConfigDict;
  weights: tf.io.WeightsManifestEntry[];
}

interface CheckpointManifest {
  format: string;
  createdAt: string;
  tfjsVersion: string;
  files: Record<string, { bytes: number; sha256: string }>;
}

/**
 * The model's variable names as this process registered them (`head/kernel_1` when a model with that
 * layer was built before) mapped to the names its layers give them (`head/kernel`), the same in every
 * process. Optimizer slots are named after the variables (`<variable>/m`), so checkpoints store them
 * under the stable names and a resume in a fresh process maps them back to its own.
 */
function stableVariableNames(model: tf.LayersModel): Map<string, string> {
  return new Map(model.trainableWeights.map((w) => [(w.read() as tf.Variable).name, w.originalName]));
}

/** `name` with its variable prefix renamed per `names` (`a/kernel_1/m` -> `a/kernel/m`); unchanged when none matches. */
function renameSlot(name: string, names: ReadonlyMap<string, string>): string {
  for (const [from, to] of names) {
    if (name === from) return to;
    if (name.startsWith(`${from}/`)) return `${to}${name.slice(from.length)}`;
  }
  return name;
}

/**
 * Serialises `optimizer`'s class, config and slot tensors (`getWeights()`, which is async in tfjs),
 * slot names renamed per `names` (runtime variable name -> stable name) when given.
 */
export async function optimizerStateFiles(optimizer: tf.Optimizer, names: ReadonlyMap<string, string> = new Map()): Promise<OptimizerStateFiles> {
  if (!(optimizer instanceof tf.Optimizer)) throw invalidParameterError('optimizer', 'a tf.Optimizer', optimizer);
  const named = await optimizer.getWeights();
  try {
    const { data, specs } = await tf.io.encodeWeights(named.map(({ name, tensor }) => ({ name: renameSlot(name, names), tensor })));
    const json: OptimizerJson = { className: optimizer.getClassName(), config: optimizer.getConfig(), weights: specs };
    return { json: JSON.stringify(json), data: new Uint8Array(data) };
  } finally {
    // getWeights() returns the slot variables themselves plus fresh tensors (the iteration count).
    for (const { tensor } of named) if (!(tensor instanceof tf.Variable)) tensor.dispose();
  }
}

/**
 * Restores optimizer state written by `optimizerStateFiles` (a checkpoint's optimiser files) into `optimizer`, or into a new
 * optimizer of the saved class and config when none is given; `where` names the source in errors;
 * slot names are renamed per `names` (stable name -> this process's variable name) when given.
 * Errors: E_MODEL for malformed state or an optimizer of another class.
 */
export async function restoreOptimizerState(files: OptimizerStateFiles, where: string, optimizer?: tf.Optimizer, names: ReadonlyMap<string, string> = new Map()): Promise<tf.Optimizer> {
  let parsed: OptimizerJson;
  try {
    parsed = JSON.parse(files.json) as OptimizerJson;
  } catch (err) {
    throw new DmlError('E_MODEL', `${where}: optimizer state is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (typeof parsed?.className !== 'string' || !Array.isArray(parsed.weights)) {
    throw new DmlError('E_MODEL', `${where}: optimizer state lacks className or weights`);
  }
  let target = optimizer;
  if (target === undefined) {
    const entry = tf.serialization.SerializationMap.getMap().classNameMap[parsed.className];
    if (entry === undefined) throw new DmlError('E_MODEL', `${where}: unknown optimizer class ${parsed.className}`);
    const [cls, fromConfig] = entry;
    const created = fromConfig(cls, parsed.config ?? {});
    if (!(created instanceof tf.Optimizer)) throw new DmlError('E_MODEL', `${where}: ${parsed.className} is not an optimizer`);
    target = created;
  } else if (target.getClassName() !== parsed.className) {
    throw new DmlError('E_MODEL', `${where}: the checkpoint holds ${parsed.className} state but the optimizer given is ${target.getClassName()}`);
  }
  let decoded: tf.NamedTensorMap;
  try {
    decoded = tf.io.decodeWeights(files.data.slice().buffer, parsed.weights);
  } catch (err) {
    throw new DmlError('E_MODEL', `${where}: cannot decode the optimizer state: ${(err as Error).message}`, { cause: err });
  }
  // Stable slot names back to this process's variable names (see stableVariableNames).
  const ordered = parsed.weights.map((spec) => ({ name: renameSlot(spec.name, names), tensor: decoded[spec.name] as tf.Tensor }));
  try {
    if (ordered.some((w) => w.tensor === undefined)) throw new DmlError('E_MODEL', `${where}: optimizer state names a weight twice`);
    await setOptimizerWeights(target, ordered);
  } finally {
    tf.dispose(Object.values(decoded));
  }
  return target;
}

function jsonText(value: unknown, name: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw invalidParameterError(name, `a JSON-serialisable value (${(err as Error).message})`, value);
  }
  if (text === undefined) throw invalidParameterError(name, 'a JSON-serialisable value', value);
  return text;
}

async function writeSynced(file: string, data: string | Uint8Array): Promise<void> {
  const handle = await open(file, 'wx');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncs a folder so that renames and new entries in it are durable (a no-op where folders cannot be opened). */
async function syncFolder(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
  } catch {
    return;
  }
  try {
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot fsync a folder; the rename is still atomic there.
  } finally {
    await handle.close();
  }
}

async function pathKind(p: string): Promise<'missing' | 'folder' | 'other'> {
  try {
    return (await stat(p)).isDirectory() ? 'folder' : 'other';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw new DmlError('E_IO', `Cannot inspect ${p}: ${(err as Error).message}`, { cause: err });
  }
}

function previousPath(dir: string): string {
  return path.join(path.dirname(dir), `.${path.basename(dir)}.previous`);
}

/**
 * Saves `contents` to the folder `dir` atomically (see the file comment), replacing an existing
 * checkpoint there. Errors: E_ARG for bad contents, or when `dir` exists and is not a checkpoint
 * folder (it is never replaced); E_IO when writing fails (the previous checkpoint is kept).
 */
export async function saveCheckpoint(dir: string, contents: CheckpointContents): Promise<void> {
  if (typeof dir !== 'string' || dir.length === 0) throw invalidParameterError('dir', 'a folder path', dir);
  const onnxModel = contents?.model instanceof Uint8Array;
  if (!(contents?.model instanceof tf.LayersModel) && !onnxModel) throw invalidParameterError('contents.model', 'a tf.LayersModel or ONNX bytes', contents?.model);
  const target = path.resolve(dir);
  const files = new Map<string, string | Uint8Array>();
  if (contents.model instanceof Uint8Array) {
    files.set(MODEL_ONNX, contents.model);
  } else {
    const model = await layersModelFiles(contents.model);
    files.set(MODEL_JSON, model.modelJson);
    files.set(WEIGHTS_FILE, model.weights);
  }
  if (contents.optimizer !== undefined && contents.model instanceof tf.LayersModel) {
    const optimizer = await optimizerStateFiles(contents.optimizer, stableVariableNames(contents.model));
    files.set(OPTIMIZER_JSON, optimizer.json);
    files.set(OPTIMIZER_BIN, optimizer.data);
  }
  if (contents.lossOptimizer !== undefined) {
    const lossOptimizer = await optimizerStateFiles(contents.lossOptimizer);
    files.set(LOSS_OPTIMIZER_JSON, lossOptimizer.json);
    files.set(LOSS_OPTIMIZER_BIN, lossOptimizer.data);
  }
  if (contents.arrays !== undefined) {
    const index = [...contents.arrays].map(([name, values]) => ({ name, length: values.length }));
    const data = new Float32Array(index.reduce((n, a) => n + a.length, 0));
    let offset = 0;
    for (const values of contents.arrays.values()) {
      data.set(values, offset);
      offset += values.length;
    }
    files.set(ARRAYS_JSON, jsonText(index, 'contents.arrays'));
    files.set(ARRAYS_BIN, new Uint8Array(data.buffer));
  }
  if (contents.state !== undefined) files.set(STATE_JSON, jsonText(contents.state, 'contents.state'));
  const manifest: CheckpointManifest = { format: CHECKPOINT_FORMAT, createdAt: new Date().toISOString(), tfjsVersion: tf.version_core, files: {} };
  for (const [name, data] of files) {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    manifest.files[name] = { bytes: bytes.length, sha256: sha256(bytes) };
  }

  const kind = await pathKind(target);
  const replaceable =
    kind === 'missing' || (kind === 'folder' && ((await pathKind(path.join(target, MANIFEST))) === 'other' || (await readdir(target)).length === 0));
  if (!replaceable) throw invalidParameterError('dir', 'a new or empty folder, or an existing dmlkit checkpoint (it is replaced)', dir);
  const parent = path.dirname(target);
  const tmp = path.join(parent, `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const previous = previousPath(target);
  let movedAway = false;
  try {
    await mkdir(parent, { recursive: true });
    await mkdir(tmp);
    for (const [name, data] of files) await writeSynced(path.join(tmp, name), data);
    await writeSynced(path.join(tmp, MANIFEST), JSON.stringify(manifest, null, 2));
    await syncFolder(tmp);
    if (kind === 'folder') {
      await rm(previous, { recursive: true, force: true });
      await rename(target, previous);
      movedAway = true;
    }
    await rename(tmp, target);
    await syncFolder(parent);
  } catch (err) {
    if (movedAway && (await pathKind(target)) === 'missing') await rename(previous, target).catch(() => undefined);
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw new DmlError('E_IO', `Cannot write checkpoint ${dir}: ${(err as Error).message}`, { cause: err });
  }
  // The new checkpoint is complete: the old one, or one left by an interrupted save, is obsolete.
  await rm(previous, { recursive: true, force: true }).catch(() => undefined);
}

async function readVerified(dir: string, manifest: CheckpointManifest, name: string): Promise<Buffer> {
  const file = path.join(dir, name);
  let bytes: Buffer;
  try {
    bytes = await readRegular(file, 'checkpoint file');
  } catch (err) {
    throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: cannot read ${name}: ${(err as Error).message}`, { cause: err });
  }
  const expected = manifest.files[name] as { bytes: number; sha256: string };
  if (bytes.length !== expected.bytes) {
    throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${name} has ${bytes.length} bytes but ${MANIFEST} records ${expected.bytes} (truncated or replaced)`);
  }
  const actual = sha256(bytes);
  if (actual !== expected.sha256) {
    throw new DmlError(
      'E_MODEL',
      `Checkpoint ${dir} is corrupt: ${name} has the recorded size (${bytes.length} bytes) but its SHA-256 checksum ${actual.slice(0, 12)}… differs from the ${expected.sha256.slice(0, 12)}… that ${MANIFEST} records (its content was altered)`,
    );
  }
  return bytes;
}

/**
 * Copies the weights of `saved` (a model rebuilt from a checkpoint) into `target`, a model built from
 * the same configuration, and disposes `saved`. Errors: E_MODEL when the two do not hold the same
 * weights (names and shapes, in order).
 */
function copyWeightsInto(saved: tf.LayersModel, target: tf.LayersModel, dir: string): tf.LayersModel {
  try {
    const describe = (m: tf.LayersModel): string[] => m.weights.map((w) => `${w.originalName} [${w.shape.join(',')}]`);
    const [have, want] = [describe(saved), describe(target)];
    const first = want.findIndex((w, i) => have[i] !== w);
    if (have.length !== want.length || first >= 0) {
      const at = first >= 0 ? first : Math.min(have.length, want.length);
      throw new DmlError('E_MODEL', `Checkpoint ${dir} does not fit the model: weight ${at} is ${have[at] ?? 'missing'} in the checkpoint but ${want[at] ?? 'missing'} in the model`);
    }
    target.setWeights(saved.getWeights());
    return target;
  } finally {
    saved.dispose();
  }
}

/** Reads and checks `dir`'s checkpoint.json. Errors as {@link loadCheckpoint}'s. */
async function readManifest(dir: string): Promise<CheckpointManifest> {
  if (typeof dir !== 'string' || dir.length === 0) throw invalidParameterError('dir', 'a folder path', dir);
  const manifestPath = path.join(dir, MANIFEST);
  let text: string;
  try {
    text = (await readRegular(manifestPath, 'checkpoint manifest')).toString('utf8');
  } catch (err) {
    if (err instanceof DmlError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new DmlError('E_IO', `Cannot read ${manifestPath}: ${(err as Error).message}`, { cause: err });
    const interrupted = (await pathKind(previousPath(path.resolve(dir)))) === 'folder';
    const hint = interrupted ? `; an interrupted save left the previous checkpoint at ${previousPath(dir)}` : '';
    throw new DmlError('E_NOT_FOUND', `No checkpoint at ${dir} (${MANIFEST} is missing)${hint}`, { cause: err });
  }
  let manifest: CheckpointManifest;
  try {
    manifest = JSON.parse(text) as CheckpointManifest;
  } catch (err) {
    throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${MANIFEST} is not valid JSON`, { cause: err });
  }
  if (manifest?.format !== CHECKPOINT_FORMAT || typeof manifest.files !== 'object' || manifest.files === null) {
    throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${MANIFEST} is not a ${CHECKPOINT_FORMAT} manifest`);
  }
  return manifest;
}

/** Reads the arrays, the loss optimiser's state and the state of a checkpoint (each optional). */
async function readArraysAndState(
  dir: string,
  manifest: CheckpointManifest,
  loaded: { arrays?: Map<string, Float32Array>; lossOptimizer?: OptimizerStateFiles; state?: unknown },
): Promise<void> {
  if (LOSS_OPTIMIZER_JSON in manifest.files && LOSS_OPTIMIZER_BIN in manifest.files) {
    loaded.lossOptimizer = {
      json: (await readVerified(dir, manifest, LOSS_OPTIMIZER_JSON)).toString('utf8'),
      data: new Uint8Array(await readVerified(dir, manifest, LOSS_OPTIMIZER_BIN)),
    };
  }
  if (ARRAYS_JSON in manifest.files && ARRAYS_BIN in manifest.files) {
    const index = JSON.parse((await readVerified(dir, manifest, ARRAYS_JSON)).toString('utf8')) as { name: string; length: number }[];
    const bytes = await readVerified(dir, manifest, ARRAYS_BIN);
    const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    loaded.arrays = new Map();
    let offset = 0;
    for (const { name, length } of index) {
      if (offset + length > data.length) throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${ARRAYS_JSON} lists more values than ${ARRAYS_BIN} holds`);
      loaded.arrays.set(name, data.slice(offset, offset + length));
      offset += length;
    }
  }
  if (STATE_JSON in manifest.files) {
    const stateText = (await readVerified(dir, manifest, STATE_JSON)).toString('utf8');
    try {
      loaded.state = JSON.parse(stateText) as unknown;
    } catch (err) {
      throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${STATE_JSON} is not valid JSON`, { cause: err });
    }
  }
}

/** A checkpoint of a network the graph trainer trains as ONNX: the model's bytes, the optimiser slots, the state. */
export interface LoadedOnnxCheckpoint {
  onnx: Uint8Array;
  /** As {@link LoadedCheckpoint.lossOptimizer}. */
  lossOptimizer?: OptimizerStateFiles;
  arrays?: Map<string, Float32Array>;
  state?: unknown;
}

/**
 * The state blob of the checkpoint in `dir` (its `state.json`, checked against the manifest), without
 * reading the rest; undefined when it has none. Errors as {@link loadCheckpoint}.
 */
export async function readCheckpointState(dir: string): Promise<unknown> {
  const manifest = await readManifest(dir);
  const loaded: { state?: unknown } = {};
  if (STATE_JSON in manifest.files) await readArraysAndState(dir, { ...manifest, files: { [STATE_JSON]: manifest.files[STATE_JSON] as CheckpointManifest['files'][string] } }, loaded);
  return loaded.state;
}

/**
 * Loads a checkpoint holding `model.onnx` (see the file comment). Errors: E_NOT_FOUND when `dir` holds
 * no checkpoint; E_MODEL when it is corrupt; E_ARG when it holds a TensorFlow.js model instead.
 */
export async function loadOnnxCheckpoint(dir: string): Promise<LoadedOnnxCheckpoint> {
  const manifest = await readManifest(dir);
  if (!(MODEL_ONNX in manifest.files)) throw new DmlError('E_ARG', `Checkpoint ${dir} holds a TensorFlow.js model, not an ONNX network: read it with loadCheckpoint`);
  const loaded: LoadedOnnxCheckpoint = { onnx: new Uint8Array(await readVerified(dir, manifest, MODEL_ONNX)) };
  await readArraysAndState(dir, manifest, loaded);
  return loaded;
}

/**
 * Loads the checkpoint in `dir`. With `options.optimizer`, the saved optimizer state is restored into
 * it (its class must match); otherwise a saved optimizer is rebuilt from its class and config. With
 * `options.into`, a model built from the same configuration, the weights are copied into it (and the
 * optimizer state bound to its variables), so that it keeps its own layer classes: the builders' training
 * layers (training-batch-norm.ts, input-conv2d.ts), which model.json cannot name, compute in other
 * rounding than the stock layers a plain load builds; a resumed run continues exactly with them.
 * Errors: E_NOT_FOUND when `dir` holds no checkpoint; E_MODEL when it is corrupt (a file missing,
 * truncated or altered, or unbuildable).
 */
export async function loadCheckpoint(dir: string, options: { optimizer?: tf.Optimizer; into?: tf.LayersModel } = {}): Promise<LoadedCheckpoint> {
  const manifest = await readManifest(dir);
  if (MODEL_ONNX in manifest.files) throw new DmlError('E_ARG', `Checkpoint ${dir} holds an ONNX network (model.kind "onnx"): read it with loadOnnxCheckpoint`);
  if (!(MODEL_JSON in manifest.files) || !(WEIGHTS_FILE in manifest.files)) {
    throw new DmlError('E_MODEL', `Checkpoint ${dir} is corrupt: ${MANIFEST} lists no ${MODEL_JSON} and ${WEIGHTS_FILE}`);
  }

  const modelJsonPath = path.join(dir, MODEL_JSON);
  const modelJson = parseModelJson((await readVerified(dir, manifest, MODEL_JSON)).toString('utf8'), modelJsonPath);
  const weights = await readVerified(dir, manifest, WEIGHTS_FILE);
  const artifacts = await tf.io.getModelArtifactsForJSON(modelJson, async (groups) => [
    groups.flatMap((g) => g.weights),
    weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.length) as ArrayBuffer,
  ]);
  const saved = await layersModelFromArtifacts(artifacts, modelJsonPath);
  const model = options.into === undefined ? saved : copyWeightsInto(saved, options.into, dir);
  const loaded: LoadedCheckpoint = { model };

  if (OPTIMIZER_JSON in manifest.files && OPTIMIZER_BIN in manifest.files) {
    const json = (await readVerified(dir, manifest, OPTIMIZER_JSON)).toString('utf8');
    const data = new Uint8Array(await readVerified(dir, manifest, OPTIMIZER_BIN));
    const toRuntime = new Map([...stableVariableNames(model)].map(([runtime, stable]) => [stable, runtime]));
    loaded.optimizer = await restoreOptimizerState({ json, data }, `Checkpoint ${dir}`, options.optimizer, toRuntime);
  }
  await readArraysAndState(dir, manifest, loaded);
  return loaded;
}
