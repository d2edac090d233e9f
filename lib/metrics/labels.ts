/**
 * @file Label encoding for the metrics: string labels of a query set and a gallery set become shared
 * Int32 codes, so the metric loops compare integers instead of strings and can count per code.
 */

import { invalidParameterError } from '../errors.js';

/** Query and gallery labels encoded with one shared code table. */
export interface EncodedLabels {
  /**
   * The distinct labels of query and gallery together, in code order: code `c` stands for
   * `labelNames[c]`. The order is ascending UTF-16 code-unit order (the order of the default
   * `Array.prototype.sort`), so codes depend only on the set of labels, never on item order.
   */
  labelNames: string[];
  /** Code of each query's label, length = number of queries. */
  queryCodes: Int32Array;
  /** Code of each gallery item's label, length = number of gallery items. */
  galleryCodes: Int32Array;
  /** Number of gallery items carrying each code, length = `labelNames.length` (0 for query-only labels). */
  galleryCountPerCode: Int32Array;
}

/**
 * Encodes the labels of a query set and a gallery set (the same array may be passed twice when the
 * query set is the gallery set) to shared codes `0 .. labelNames.length - 1`.
 */
export function encodeLabels(queryLabels: readonly string[], galleryLabels: readonly string[]): EncodedLabels {
  const distinctLabels = new Set<string>();
  collectLabels(queryLabels, 'queryLabels', distinctLabels);
  collectLabels(galleryLabels, 'galleryLabels', distinctLabels);
  const labelNames = [...distinctLabels].sort();
  const codeOfLabel = new Map<string, number>();
  labelNames.forEach((label, code) => codeOfLabel.set(label, code));
  const toCodes = (labels: readonly string[]): Int32Array =>
    Int32Array.from(labels, (label) => codeOfLabel.get(label)!);
  const galleryCodes = toCodes(galleryLabels);
  return {
    labelNames,
    queryCodes: toCodes(queryLabels),
    galleryCodes,
    galleryCountPerCode: countLabelCodes(galleryCodes, labelNames.length),
  };
}

/**
 * Number of items per code: `result[c] = |{ i : codes[i] = c }|` for `c` in `0 .. codeCount - 1`.
 * Every code must be an integer in `[0, codeCount)`.
 */
export function countLabelCodes(codes: Int32Array, codeCount: number): Int32Array {
  if (!Number.isSafeInteger(codeCount) || codeCount < 0) {
    throw invalidParameterError('codeCount', 'a non-negative integer', codeCount);
  }
  const counts = new Int32Array(codeCount);
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i]!;
    if (code < 0 || code >= codeCount) {
      throw invalidParameterError(`codes[${i}]`, `a label code in [0, ${codeCount})`, code);
    }
    counts[code]!++;
  }
  return counts;
}

function collectLabels(labels: readonly string[], name: string, into: Set<string>): void {
  if (!Array.isArray(labels)) throw invalidParameterError(name, 'an array of strings', labels);
  for (let i = 0; i < labels.length; i++) {
    const label: unknown = labels[i];
    if (typeof label !== 'string') throw invalidParameterError(`${name}[${i}]`, 'a string label', label);
    into.add(label);
  }
}
