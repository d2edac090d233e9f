/**
 * @file What every loss computes from a batch, made once and only when a loss asks for it: the batch
 * checked against the {@link MetricLoss} contract, its label masks, the cosine similarity matrix (on
 * the gradient tape), that matrix's values read back once for mining, and the distances on the unit
 * sphere. {@link BaseMetricLoss.compute} builds one per batch and hands it to the loss's formula.
 */
import * as tf from '@tensorflow/tfjs';
import { checkBatch, cosineSimilarityMatrix, distancesFromSimilarities, labelPairMasks, referencePairMasks, type DistanceKind, type PairMasks } from '../similarity.js';
import { minedPairMasks, type PairMiner } from '../mining/pair-miner.js';

/**
 * Reference items a batch's rows are compared with instead of with each other (a cross-batch memory,
 * cross-batch-memory.ts): constants, no gradient flows into them.
 */
export interface LossReferences {
  /** [R, D], L2-normalised. */
  readonly embeddings: tf.Tensor2D;
  /** One label per reference item. */
  readonly labels: Int32Array;
  /** Each row's own reference item (its copy in the memory), or -1: neither a positive nor a negative of the row. */
  readonly selfColumns: Int32Array;
}

/**
 * One batch of L2-normalised embeddings and their labels, with its derived matrices made on first use:
 * B×B, or B×R against {@link LossReferences} (the masks' `columns` say which).
 */
export class LossBatch {
  /** The embeddings [B, D], L2-normalised and on the gradient tape. */
  readonly embeddings: tf.Tensor2D;
  /** One label per row. */
  readonly labels: Int32Array;
  /** B. */
  readonly size: number;
  #masks: PairMasks | undefined;
  #similarities: tf.Tensor2D | undefined;
  #values: Float32Array | undefined;
  readonly #distances = new Map<DistanceKind, tf.Tensor2D>();
  readonly #references: LossReferences | undefined;

  /** Checks the batch (embeddings of rank 2, one Int32 label per row); E_ARG naming what is wrong. */
  constructor(embeddings: tf.Tensor2D, labels: Int32Array, references?: LossReferences) {
    this.size = checkBatch(embeddings, labels);
    this.embeddings = embeddings;
    this.labels = labels;
    this.#references = references;
  }

  /** The row-major B×C positive and negative label masks (C = B, or the reference items). */
  get masks(): PairMasks {
    this.#masks ??= this.#references ? referencePairMasks(this.labels, this.#references.labels, this.#references.selfColumns) : labelPairMasks(this.labels);
    return this.#masks;
  }

  /** The cosine similarity matrix S = F Fᵀ [B, B] (or F Rᵀ [B, R] against reference items), on the gradient tape. */
  get similarities(): tf.Tensor2D {
    this.#similarities ??= this.#references ? tf.matMul(this.embeddings, this.#references.embeddings, false, true) : cosineSimilarityMatrix(this.embeddings);
    return this.#similarities;
  }

  /** The values of {@link similarities}, read back once (detached: for mining). */
  get values(): Float32Array {
    this.#values ??= this.similarities.dataSync() as Float32Array;
    return this.#values;
  }

  /** The pair masks a loss's `miner` leaves (mining/pair-miner.ts); the label masks without one. */
  minedMasks(miner: PairMiner): PairMasks {
    return minedPairMasks(this.values, () => this.distances('euclidean').dataSync(), this.masks, miner);
  }

  /** Distances of kind `kind` from the similarities [B, B], on the gradient tape. */
  distances(kind: DistanceKind): tf.Tensor2D {
    let distances = this.#distances.get(kind);
    if (distances === undefined) {
      distances = distancesFromSimilarities(this.similarities, kind);
      this.#distances.set(kind, distances);
    }
    return distances;
  }
}
