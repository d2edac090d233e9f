/**
 * @file Cross-batch memory (XBM: Wang, Zhang, Huang and Scott, "Cross-Batch Memory for Embedding
 * Learning", CVPR 2020) as pytorch-metric-learning's `CrossBatchMemory` wrapper, for the pair and
 * triplet losses that take it (`loss.memory` of `contrastive`, `multi-similarity`, `triplet-margin`,
 * `circle`, `supcon`): a queue of the last `size` embeddings and labels (detached), into which each
 * step first enqueues its batch (overwriting the oldest), then computes the wrapped loss with the
 * batch's embeddings as anchors (rows, on the gradient tape) against the memory's items as the
 * positives and negatives (columns, constants), each row's own copy in the memory excluded. The loss's
 * miner, if it has one, mines these B×M pairs (PML's `CrossBatchMemory(miner=...)`).
 *
 * `startStep` (default 0) is the XBM paper's warm-up: the first `startStep` steps compute the plain
 * batch loss and leave the memory empty, because early embeddings drift too fast to be worth
 * remembering (the authors start after 1,000 iterations). From then on the loss is the memory loss
 * alone, as PML computes it (the authors' code adds it to the batch loss; with the batch in the
 * memory, the batch's own pairs are among the memory's, detached on the reference side). `size`
 * (PML's `memory_size`, default 1024) must hold a batch.
 *
 * The memory, its write position and the steps taken are the loss's step state: saved in every
 * checkpoint (arrays `memory/embeddings`, `memory/labels`), restored on resume and after the trainer's
 * probe step, so a resumed run continues with the memory an uninterrupted one has.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { DmlError, invalidParameterError } from '../../errors.js';
import type { BaseMetricLoss } from './base-loss.js';
import { LossBatch } from './loss-batch.js';
import type { LossOutput, LossStepState, LossStepStore, MetricLoss } from './metric-loss.js';

/** `loss.memory`: null (no memory, default) or the queue's size and the step it starts at. */
export const crossBatchMemorySchema = z
  .strictObject({
    /** Embeddings the memory holds (PML's memory_size, 1024). */
    size: z.int().min(1).default(1024),
    /** Steps of plain batch loss before the memory starts (0). */
    startStep: z.int().min(0).default(0),
  })
  .nullable()
  .default(null);

/** A parsed `loss.memory`. */
export type CrossBatchMemoryOptions = z.output<typeof crossBatchMemorySchema>;

const EMBEDDINGS = 'memory/embeddings';
const LABELS = 'memory/labels';

/** `loss` as it is without a memory (its `memory` option null), or wrapped in one (see the file comment). */
export function withCrossBatchMemory(loss: BaseMetricLoss<object>): MetricLoss {
  const options = loss.config['memory'] as CrossBatchMemoryOptions;
  return options === null ? loss : new CrossBatchMemoryLoss(loss, options.size, options.startStep);
}

/** A loss computed against a cross-batch memory (see the file comment). */
export class CrossBatchMemoryLoss implements MetricLoss {
  readonly name: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly trainableVariables: readonly tf.Variable[];
  readonly stepState: LossStepStore;
  /** Row-major [size, D] once the first batch is in (D from it). */
  private embeddings: Float32Array | undefined;
  private readonly labels: Int32Array;
  /** The slot the next embedding goes to. */
  private next = 0;
  /** Whether every slot holds an embedding. */
  private filled = false;
  /** Steps (compute calls) taken. */
  private steps = 0;

  constructor(
    private readonly inner: BaseMetricLoss<object>,
    private readonly size: number,
    private readonly startStep: number,
  ) {
    this.name = inner.name;
    this.config = inner.config;
    this.trainableVariables = inner.trainableVariables;
    this.labels = new Int32Array(size);
    this.stepState = { save: () => this.save(), restore: (state, where) => this.restore(state, where) };
  }

  /** The wrapped loss's: its own parameters' training (the margin losses' β). */
  get parameterTraining(): MetricLoss['parameterTraining'] {
    return this.inner.parameterTraining;
  }

  compute(embeddings: tf.Tensor2D, labels: Int32Array): LossOutput {
    this.steps++;
    if (this.steps <= this.startStep) return this.inner.compute(embeddings, labels);
    const batch = embeddings.shape[0];
    const dim = embeddings.shape[1];
    if (batch > this.size) throw invalidParameterError('loss.memory.size', `at least the batch size ${batch} (the memory must hold a batch)`, this.size);
    if (this.embeddings !== undefined && this.embeddings.length !== this.size * dim) {
      throw invalidParameterError('embeddings', `rows of ${this.embeddings.length / this.size} values (the memory's)`, `rows of ${dim}`);
    }
    this.embeddings ??= new Float32Array(this.size * dim);
    const values = embeddings.dataSync();
    const selfColumns = new Int32Array(batch);
    for (let i = 0; i < batch; i++) {
      const slot = (this.next + i) % this.size;
      this.embeddings.set(values.subarray(i * dim, (i + 1) * dim), slot * dim);
      this.labels[slot] = labels[i]!;
      selfColumns[i] = slot;
    }
    const advanced = this.next + batch;
    if (advanced >= this.size) this.filled = true;
    this.next = advanced % this.size;
    const count = this.filled ? this.size : this.next;
    const references = { embeddings: tf.tensor2d(this.embeddings.subarray(0, count * dim), [count, dim]), labels: this.labels.slice(0, count), selfColumns };
    return this.inner.computeBatch(new LossBatch(embeddings, labels, references));
  }

  private save(): LossStepState {
    const arrays = new Map<string, Float32Array>();
    if (this.embeddings !== undefined) {
      arrays.set(EMBEDDINGS, Float32Array.from(this.embeddings));
      arrays.set(LABELS, Float32Array.from(this.labels));
    }
    return { arrays, values: [this.next, this.filled ? 1 : 0, this.steps] };
  }

  private restore(state: LossStepState, where: string): void {
    const [next, filled, steps] = state.values;
    const embeddings = state.arrays.get(EMBEDDINGS);
    const labels = state.arrays.get(LABELS);
    const valid =
      state.values.length === 3 &&
      Number.isInteger(next) && next! >= 0 && next! < this.size && (filled === 0 || filled === 1) && Number.isInteger(steps) && steps! >= 0 &&
      (embeddings === undefined) === (labels === undefined) && (labels === undefined || (labels.length === this.size && embeddings!.length % this.size === 0));
    if (!valid) throw new DmlError('E_ARG', `Cannot resume from ${where}: it holds no cross-batch memory of ${this.size} items for the ${this.name} loss`);
    this.next = next!;
    this.filled = filled === 1;
    this.steps = steps!;
    this.embeddings = embeddings === undefined ? undefined : Float32Array.from(embeddings);
    this.labels.set(labels ?? new Float32Array(this.size));
  }
}
