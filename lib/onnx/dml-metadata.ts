/**
 * @file The `dml.*` keys dmlkit writes into an ONNX model's `metadata_props`, and their parsing.
 * The exporter writes them; the evaluator and the server read them back so a model carries its own
 * preprocessing. Models from elsewhere may carry the same keys (see spec/fixtures/torch).
 */
import { DmlError } from '../errors.js';
import type { Preprocessing } from '../image/preprocessing.js';

/** Metadata keys, all optional. */
export const DML_METADATA_KEYS = {
  /** JSON of a full or partial {@link Preprocessing}. */
  preprocessing: 'dml.preprocessing',
  /** Embedding dimension, decimal. */
  embeddingDim: 'dml.embedding_dim',
  /** Distance the model was trained for: `cosine` (the only one the evaluator ranks by). */
  distance: 'dml.distance',
  /** SHA-256 of the training configuration that produced the model. */
  trainingConfigHash: 'dml.training_config_hash',
  /** dmlkit version that wrote the model. */
  version: 'dml.version',
} as const;

/** Parsed `dml.*` metadata. */
export interface DmlModelMetadata {
  preprocessing?: Partial<Preprocessing>;
  embeddingDim?: number;
  distance?: string;
}

/** Extracts the `dml.*` entries from a model's metadata_props; malformed values are an E_MODEL error. */
export function parseDmlMetadata(props: Record<string, string>, modelName: string): DmlModelMetadata {
  const result: DmlModelMetadata = {};
  const pre = props[DML_METADATA_KEYS.preprocessing];
  if (pre !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(pre);
    } catch {
      throw new DmlError('E_MODEL', `${modelName}: metadata ${DML_METADATA_KEYS.preprocessing} is not valid JSON`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new DmlError('E_MODEL', `${modelName}: metadata ${DML_METADATA_KEYS.preprocessing} must be a JSON object`);
    }
    result.preprocessing = parsed as Partial<Preprocessing>;
  }
  const dim = props[DML_METADATA_KEYS.embeddingDim];
  if (dim !== undefined) {
    const n = Number(dim);
    if (!Number.isInteger(n) || n <= 0) {
      throw new DmlError('E_MODEL', `${modelName}: metadata ${DML_METADATA_KEYS.embeddingDim} must be a positive integer, found ${JSON.stringify(dim)}`);
    }
    result.embeddingDim = n;
  }
  const distance = props[DML_METADATA_KEYS.distance];
  if (distance !== undefined) result.distance = distance;
  return result;
}
