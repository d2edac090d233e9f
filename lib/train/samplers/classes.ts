/**
 * @file Groups item labels into classes for the samplers.
 */

/** One class: its label and the indices of its items, ascending. */
export interface SamplerClass {
  label: number;
  items: Int32Array;
}

/**
 * The classes of `labels` (one integer label per item), ordered by label ascending, each with its item
 * indices ascending. The order is fixed so that only the seeded generator decides batch composition.
 */
export function groupByClass(labels: Int32Array): SamplerClass[] {
  const counts = new Map<number, number>();
  for (const label of labels) counts.set(label, (counts.get(label) ?? 0) + 1);
  const byLabel = new Map<number, { items: Int32Array; fill: number }>();
  for (const [label, count] of counts) byLabel.set(label, { items: new Int32Array(count), fill: 0 });
  for (let i = 0; i < labels.length; i++) {
    const entry = byLabel.get(labels[i] as number) as { items: Int32Array; fill: number };
    entry.items[entry.fill++] = i;
  }
  return [...byLabel.entries()].sort((a, b) => a[0] - b[0]).map(([label, { items }]) => ({ label, items }));
}
