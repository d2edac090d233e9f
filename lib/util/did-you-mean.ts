/**
 * @file "Did you mean" for misspelt names (config keys, choices): the nearest candidate by edit
 * distance, when it is near enough to be a likely typo.
 */

/**
 * Edit distance between `a` and `b`, case-insensitive: insertions, deletions, substitutions and swaps
 * of two neighbouring letters (`evrey` -> `every` is 1), each costing 1 (optimal string alignment).
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = [Array.from({ length: t.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      const above = rows[i - 1] as number[];
      let d = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + (s[i - 1] === t[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = d;
    }
    rows.push(row);
  }
  return (rows[s.length] as number[])[t.length] as number;
}

/**
 * The candidate nearest to `word`, when at most a third of its length away (at least 1, at most 3
 * edits); ties go to the earlier candidate. undefined when none is that near.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(word, candidate);
    if (d < bestDistance && d <= limit && candidate !== word) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
