/**
 * @file What a run records at each validation point: report.json's `history` entries and the epoch
 * and validation lines of log.jsonl (the trainer writes them, the training report draws them).
 */

/** Validation metrics of one epoch (epoch 0 = before training). */
export interface EpochRecord {
  /** The epoch (1-based) of the period's last step; 0 for the untrained model. */
  epoch: number;
  /** Optimiser steps taken since the start of the run when the record was made (absent in records of older runs). */
  globalStep?: number;
  /** Mean loss over steps with a valid tuple (null for epoch 0 and for epochs without any). */
  loss: number | null;
  /** Fraction of anchors (or tuples) with a valid tuple, over the epoch. */
  validFraction: number | null;
  /** Steps that updated the weights / all steps, of this period (an epoch, or `validation.everySteps` steps of a `steps` run). */
  updates: number;
  steps: number;
  /** The learning rate of the period's last step. */
  learningRate: number;
  seconds: number;
  stepsPerSecond: number | null;
  /** Held-out metrics (fine labels, also with `data.trainLabelGroups`); see {@link ValidationRecord}. */
  validation?: ValidationRecord;
  /**
   * The triplet scatter diagram's summary: fraction of anchors below the diagonal and their count;
   * for LoOp losses also the fraction of the synthetic-negative series below it (lib/train/scatter.ts).
   */
  scatter?: { correctFraction: number; points: number; loopCorrectFraction?: number };
}

/** The metrics of one validation, from the evaluation spine (lib/eval/evaluate-embeddings.ts). */
export interface ValidationRecord {
  /** Recall@K keyed by K (validation.ks). */
  recall: Record<string, number>;
  mapAtR: number | null;
  /** NMI with K = the number of held-out labels. */
  nmi: number;
  /** NMI at each cluster count of validation.clusterCounts (resolved, ascending; always holds 1x). */
  nmiCurve: Array<{ clusters: number; nmi: number }>;
  /** NMI+ (paper 004): the curve's NMI at 10x the label count; null unless 10x is in validation.clusterCounts. */
  nmiPlus: number | null;
  queryCount: number;
}
