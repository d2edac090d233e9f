/**
 * @file The files of a training run's triplet scatter diagram for one epoch (`scatter/epoch-NNN.*` in
 * the run folder; `scatter/step-NNNNNN.*` for a validation point of a `steps` run): the scatter as JSON, its SVG plot (with the LoOp series for LoOp losses) and the
 * SVG histogram of positive and negative pair similarities. Each file is written atomically.
 */
import path from 'node:path';
import type { TripletScatter } from './scatter.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { histogramSvg, scatterRanges, scatterSvg } from '../report/svg-scatter.js';

/** Writes the scatter files of `epoch` (or of global step `epoch` with unit `step`) into `<out>/scatter/`; `setName` names the embedded set (`validation`, `train`). */
export async function writeScatterFiles(out: string, epoch: number, scatter: TripletScatter, setName: string, unit: 'epoch' | 'step' = 'epoch'): Promise<void> {
  const name = `${unit}-${String(epoch).padStart(unit === 'epoch' ? 3 : 6, '0')}`;
  const at = unit === 'epoch' ? `epoch ${epoch}` : `step ${epoch}`;
  await writeFileAtomic(path.join(out, 'scatter', `${name}.json`), JSON.stringify(scatter));
  const below = `${(100 * scatter.correctFraction).toFixed(1)}%`;
  await writeFileAtomic(
    path.join(out, 'scatter', `${name}.svg`),
    scatterSvg(scatter.points, {
      ...scatterRanges([...scatter.points, ...(scatter.loop?.points ?? [])]),
      mainLabel: 'anchors (easiest positive, hardest negative)',
      title: scatter.loop
        ? `${at[0]?.toUpperCase()}${at.slice(1)}, ${setName}: ${below} below diagonal, LoOp ${(100 * scatter.loop.correctFraction).toFixed(1)}%`
        : `Triplet scatter, ${at} (${setName}; ${below} below diagonal)`,
      xLabel: 'similarity of the easiest positive',
      yLabel: scatter.loop ? 'similarity of the hardest (real or LoOp) negative' : 'similarity of the hardest negative',
      diagonal: true,
      ...(scatter.loop
        ? {
            mainLabel: 'hardest real negative',
            series: [{ name: `LoOp optimal negative (${scatter.loop.geometry}s, 1 - d²/2)`, colour: '#2ca02c', points: scatter.loop.points }],
          }
        : {}),
    }),
  );
  await writeFileAtomic(
    path.join(out, 'scatter', `${name}-histogram.svg`),
    histogramSvg(
      [
        { name: 'positive pairs', counts: scatter.positiveCounts },
        { name: 'negative pairs', counts: scatter.negativeCounts },
      ],
      [-1, 1],
      { title: `Pair similarities, ${at}`, xLabel: 'cosine similarity' },
    ),
  );
}
