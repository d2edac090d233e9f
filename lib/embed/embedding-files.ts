/**
 * @file Saving and loading an {@link EmbeddingSet} as `<name>.npy` (float32, N x D) plus a JSON sidecar
 * `<name>.json` holding ids, labels and provenance. Both files are written atomically; the sidecar is
 * written last and records the vectors' count and dimension, so a half-written pair is detected.
 */
import { readRegular } from '../util/regular-file.js';
import { DmlError } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import type { EmbeddingSet } from './embedding-set.js';
import { readNpy, writeNpy } from './npy.js';

/** Format tag of the sidecar. */
export const EMBEDDING_SIDECAR_FORMAT = 'dmlkit.embeddings/1';

/** Where the embeddings came from; free-form beyond the documented keys. */
export interface EmbeddingProvenance {
  modelPath?: string;
  modelSha256?: string;
  manifestHash?: string;
  preprocessing?: unknown;
  executionProvider?: string;
  [key: string]: unknown;
}

/** What `<name>.json` holds beside `<name>.npy`. */
export interface EmbeddingSidecar {
  format: string;
  count: number;
  dim: number;
  ids: string[];
  labels: string[];
  provenance: EmbeddingProvenance;
}

/** Paths of the two files of a stored set named by its prefix (`runs/x/query` -> query.npy, query.json). */
export function embeddingFiles(prefix: string): { vectors: string; sidecar: string } {
  return { vectors: `${prefix}.npy`, sidecar: `${prefix}.json` };
}

/** Writes `set` to `<prefix>.npy` and `<prefix>.json`. */
export async function saveEmbeddingSet(prefix: string, set: EmbeddingSet, provenance: EmbeddingProvenance = {}): Promise<void> {
  const files = embeddingFiles(prefix);
  await writeNpy(files.vectors, set.vectors, [set.count, set.dim]);
  const sidecar: EmbeddingSidecar = {
    format: EMBEDDING_SIDECAR_FORMAT,
    count: set.count,
    dim: set.dim,
    ids: set.ids,
    labels: set.labels,
    provenance,
  };
  await writeFileAtomic(files.sidecar, JSON.stringify(sidecar));
}

/** Reads the sidecar `file` (`<name>.json`) of a stored set, checking its format. */
export async function readEmbeddingSidecar(file: string): Promise<EmbeddingSidecar> {
  let sidecar: EmbeddingSidecar;
  try {
    sidecar = JSON.parse((await readRegular(file, 'embedding sidecar')).toString('utf8')) as EmbeddingSidecar;
  } catch (err) {
    if (err instanceof DmlError) throw err;
    const e = err as NodeJS.ErrnoException;
    throw new DmlError(e.code === 'ENOENT' ? 'E_NOT_FOUND' : 'E_DATASET', `Cannot read embedding sidecar ${file}: ${e.message}`, {
      cause: err,
    });
  }
  if (sidecar?.format !== EMBEDDING_SIDECAR_FORMAT) {
    throw new DmlError('E_DATASET', `${file}: expected format ${EMBEDDING_SIDECAR_FORMAT} but found ${String(sidecar?.format)}`);
  }
  return sidecar;
}

/** Reads a set written by {@link saveEmbeddingSet}; any inconsistency between the two files is an error. */
export async function loadEmbeddingSet(prefix: string): Promise<{ set: EmbeddingSet; provenance: EmbeddingProvenance }> {
  const files = embeddingFiles(prefix);
  const sidecar = await readEmbeddingSidecar(files.sidecar);
  const npy = await readNpy(files.vectors);
  if (!(npy.data instanceof Float32Array) || npy.shape.length !== 2) {
    throw new DmlError('E_DATASET', `${files.vectors}: expected a float32 N x D array but found ${npy.dtype} of shape (${npy.shape.join(', ')})`);
  }
  const [count, dim] = npy.shape as [number, number];
  if (count !== sidecar.count || dim !== sidecar.dim || sidecar.ids.length !== count || sidecar.labels.length !== count) {
    throw new DmlError(
      'E_DATASET',
      `${files.vectors} holds ${count} x ${dim} vectors but ${files.sidecar} describes ${sidecar.count} x ${sidecar.dim} with ${sidecar.ids.length} ids and ${sidecar.labels.length} labels`,
    );
  }
  return { set: { vectors: npy.data, count, dim, ids: sidecar.ids, labels: sidecar.labels }, provenance: sidecar.provenance };
}
