/**
 * @file The files an ONNX model is made of and its identity over all of them.
 *
 * A model exported with external data (`onnx.save(..., save_as_external_data=True)`, optimum's and
 * transformers.js' `model.onnx` + `model.onnx_data` for models over 2 GB) keeps its weights in files
 * named by the graph's tensors (`external_data` `location`, relative to the model's folder). Such a
 * model must be loaded by path so that onnxruntime finds them, and its identity must cover them: two
 * models with the same `model.onnx` and different `model.onnx_data` are different models (their
 * embeddings must not share a cache entry, a report hash or an index).
 */
import { copyFile, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DmlError } from '../errors.js';
import { canonicalJson, sha256, sha256File } from '../util/hash.js';
import { checkRegularFile, fileReadError, openRegular } from '../util/regular-file.js';
import { readExternalDataLocations, readExternalDataRanges, type ExternalTensorRange } from './metadata.js';

/** One external data file of a model. */
export interface ExternalDataFile {
  /** Its `location` as the model names it, relative to the model's folder. */
  location: string;
  /** SHA-256 of its bytes. */
  sha256: string;
}

/** A model file read from disk, with its external data files hashed. */
export interface ModelFiles {
  /** The model's path as given. */
  path: string;
  /** The bytes of the model file itself (the graph, and the weights it holds inside). */
  bytes: Uint8Array;
  /** The external data files, in order of first use; empty for a self-contained model. */
  externalData: ExternalDataFile[];
  /** The model's identity: see {@link modelIdentity}. */
  sha256: string;
}

/**
 * The identity of a model: the SHA-256 of the model file for a self-contained model (so it is the
 * plain file hash, as before external data were supported), else the SHA-256 of the canonical JSON
 * `{ model: <sha256 of the model file>, externalData: [{ location, sha256 }, ...] }`, which changes
 * when any of the files or their names change.
 */
export function modelIdentity(modelSha256: string, externalData: readonly ExternalDataFile[]): string {
  if (externalData.length === 0) return modelSha256;
  return sha256(canonicalJson({ model: modelSha256, externalData: externalData.map(({ location, sha256: hash }) => ({ location, sha256: hash })) }));
}

/** Largest ONNX file: protobuf's 2 GiB message limit (larger models keep their weights in external data). */
export const MAX_MODEL_FILE_BYTES = 2 ** 31;

/**
 * Checks `modelPath` names a regular file (after links; util/regular-file.ts) of at most
 * {@link MAX_MODEL_FILE_BYTES}, before its bytes are read (`dml eval /dev/zero` used to read until
 * memory ran out). Errors: E_NOT_FOUND when missing; E_ARG otherwise.
 */
export async function checkModelFile(modelPath: string): Promise<void> {
  checkModelSize(modelPath, (await checkRegularFile(modelPath, 'model')).size);
}

function checkModelSize(modelPath: string, size: number): void {
  if (size > MAX_MODEL_FILE_BYTES) {
    throw new DmlError('E_ARG', `Cannot read model ${modelPath}: ${size} bytes, more than an ONNX file can hold (2 GiB; larger models keep their weights in external data files)`);
  }
}

/** The bytes of the model file at `modelPath`, checked as {@link checkModelFile} checks it. Errors as its, E_IO when reading fails. */
export async function readModelBytes(modelPath: string): Promise<Uint8Array> {
  try {
    const { handle, info } = await openRegular(modelPath, 'model');
    try {
      checkModelSize(modelPath, info.size);
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (err) {
    throw fileReadError('model', modelPath, err);
  }
}

/**
 * Reads the model at `modelPath`, finds the external data files it names and hashes them.
 * Errors: E_NOT_FOUND when the model or one of its external data files is missing (naming the file
 * and the model that needs it); E_IO when one cannot be read; E_MODEL for malformed bytes or a
 * location outside the model's folder.
 */
export async function readModelFiles(modelPath: string): Promise<ModelFiles> {
  const bytes = await readModelBytes(modelPath);
  const ranges = readExternalDataRanges(bytes, modelPath);
  const locations = [...new Set(ranges.map((r) => r.location))];
  const externalData: ExternalDataFile[] = [];
  for (const location of locations) {
    const file = path.join(path.dirname(modelPath), location);
    let hash: string;
    try {
      hash = await sha256File(file, 'external data file');
    } catch (err) {
      const e = err as DmlError;
      throw new DmlError(
        e.code,
        `${modelPath} keeps weights in external data file "${location}", which ${e.code === 'E_NOT_FOUND' ? `is missing (expected ${file}, beside the model)` : `cannot be read: ${e.message}`}`,
        { cause: err },
      );
    }
    await checkExternalDataFits(modelPath, file, location, ranges);
    externalData.push({ location, sha256: hash });
  }
  return { path: modelPath, bytes, externalData, sha256: modelIdentity(sha256(bytes), externalData) };
}

/**
 * Refuses an external data file too short for the tensors the model reads from it: another model's data
 * file under this name (a swapped or overwritten `model.onnx_data`), or a truncated copy. Named as the
 * culprit with the first tensor that does not fit, before onnxruntime reports an offset out of bounds.
 * Called after the hashing, which refuses a missing file or one that is not a regular file with its own message.
 */
async function checkExternalDataFits(modelPath: string, file: string, location: string, ranges: readonly ExternalTensorRange[]): Promise<void> {
  const size = (await stat(file).catch(() => undefined))?.size;
  if (size === undefined) return;
  const misfit = ranges.find((r) => r.location === location && r.offset + (r.length ?? 0) > size);
  if (misfit === undefined) return;
  throw new DmlError(
    'E_MODEL',
    `${modelPath}: its external data file "${location}" (${file}) does not belong to it: tensor "${misfit.tensor}" is at bytes ${misfit.offset}-${misfit.offset + (misfit.length ?? 0)} but the file holds ${size} bytes (another model's data file under that name, or a cut-short copy); put the data file exported with this model beside it`,
  );
}

/**
 * Copies the model at `modelPath` to `target` (a file path) and its external data files beside it
 * under the same relative locations, so the copy loads and has the same identity. Returns the copied
 * files' paths (the model first). Errors: E_NOT_FOUND, E_IO and E_MODEL as {@link readModelFiles}; E_MODEL
 * for a data file whose location is the copy's own name; E_IO from the copies (a missing external data
 * file is an E_IO from its copy).
 */
export async function copyModelFiles(modelPath: string, target: string): Promise<string[]> {
  const locations = readExternalDataLocations(await readModelBytes(modelPath), modelPath);
  const clash = locations.find((location) => path.join(path.dirname(target), location) === path.join(target));
  if (clash !== undefined) {
    throw new DmlError('E_MODEL', `${modelPath} keeps weights in external data file ${JSON.stringify(clash)}, the name its copy ${target} takes; rename the data file (and its location in the model)`);
  }
  const copied = [target];
  await copyFile(modelPath, target);
  for (const location of locations) {
    const from = path.join(path.dirname(modelPath), location);
    // copyFile would block on a FIFO: the same check as every read.
    await checkRegularFile(from, `model ${modelPath}'s external data file`);
    const to = path.join(path.dirname(target), location);
    await mkdir(path.dirname(to), { recursive: true });
    await copyFile(from, to);
    copied.push(to);
  }
  return copied;
}
