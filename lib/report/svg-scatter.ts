/**
 * @file SVG scatter plot and histogram, for the triplet scatter diagram (x = easiest-positive
 * similarity, y = hardest-negative similarity per anchor) and the positive/negative similarity histograms.
 */
import { escapeXml, fittedRange, tickStep } from './svg-line-chart.js';

/** Settings of {@link scatterSvg}. */
export interface ScatterOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Axis range, the same for x and y; default [-1, 1]. */
  range?: [number, number];
  /** The x axis' own range (overrides `range`; see {@link scatterRanges} for ranges fitted to the points). */
  xRange?: [number, number];
  /** The y axis' own range (overrides `range`). */
  yRange?: [number, number];
  /** Draw the diagonal y = x (points below it are correctly ordered triplets). */
  diagonal?: boolean;
  size?: number;
  /**
   * Further point series drawn over the main one, each in its own colour, with a legend (e.g. the
   * LoOp synthetic optimal negatives of the triplet scatter diagram).
   */
  series?: ReadonlyArray<ScatterSeries>;
  /** Legend label of the main series (coloured by y < x: blue, else red); used when `series` is given. */
  mainLabel?: string;
}

/** A further point series of {@link scatterSvg}. */
export interface ScatterSeries {
  name: string;
  /** CSS colour, e.g. `#2ca02c`. */
  colour: string;
  points: ReadonlyArray<{ x: number; y: number }>;
}

const MARGIN = { left: 72, right: 20, top: 40, bottom: 50 };

/** Height of one legend row under the scatter plot. */
const LEGEND_ROW = 16;

/** Share of the points each end of an axis may leave out, so a few outliers do not squeeze the rest into a corner. */
export const SCATTER_TRIM = 0.02;

/** The values of `values` between their `trim` and `1 - trim` quantiles (all of them when few). */
function trimmed(values: number[], trim: number): number[] {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const drop = Math.floor(sorted.length * trim);
  return sorted.slice(drop, sorted.length - drop);
}

/**
 * Axis ranges that show where `points` are: the {@link fittedRange} of the x values and of the y
 * values between their 2% and 98% quantiles ({@link SCATTER_TRIM}; padded by a tenth of that
 * spread), each kept within [-1, 1] (cosine similarities); [-1, 1] for both without points.
 * {@link scatterSvg} counts the points left outside in its legend.
 */
export function scatterRanges(points: ReadonlyArray<{ x: number; y: number }>): { xRange: [number, number]; yRange: [number, number] } {
  if (points.length === 0) return { xRange: [-1, 1], yRange: [-1, 1] };
  // Similarities of a young model can sit within 0.001 of each other: pad by a tenth of the spread only.
  const fit = (values: number[]): [number, number] => fittedRange(trimmed(values, SCATTER_TRIM), [-1, 1], 1e-5);
  return { xRange: fit(points.map((p) => p.x)), yRange: fit(points.map((p) => p.y)) };
}

/**
 * A square scatter plot of `points`, coloured by y < x (blue) or not (red), with a legend under the
 * plot naming both colours (and any further series), so it never covers a point. The diagonal y = x
 * is drawn where it crosses the axes' ranges.
 */
export function scatterSvg(points: ReadonlyArray<{ x: number; y: number }>, options: ScatterOptions): string {
  const size = options.size ?? 480;
  const [xlo, xhi] = options.xRange ?? options.range ?? [-1, 1];
  const [ylo, yhi] = options.yRange ?? options.range ?? [-1, 1];
  const plot = size - MARGIN.left - MARGIN.right;
  const px = (v: number): number => MARGIN.left + ((v - xlo) / (xhi - xlo)) * plot;
  const py = (v: number): number => MARGIN.top + plot - ((v - ylo) / (yhi - ylo)) * plot;
  const inside = (p: { x: number; y: number }): boolean => p.x >= xlo && p.x <= xhi && p.y >= ylo && p.y <= yhi;
  const all = [...points, ...(options.series ?? []).flatMap((series) => series.points)].filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const outside = all.filter((p) => !inside(p)).length;
  const legendRows = 2 + (options.series?.length ?? 0) + (outside > 0 ? 1 : 0);
  const height = MARGIN.top + plot + MARGIN.bottom + legendRows * LEGEND_ROW;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${height}" viewBox="0 0 ${size} ${height}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
    `<rect width="${size}" height="${height}" fill="white"/>`,
    `<text x="${size / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plot}" height="${plot}" fill="none" stroke="#444"/>`,
  ];
  const ticks = (lo: number, hi: number, tick: (v: number, text: string) => string): void => {
    const step = tickStep(hi - lo);
    const decimals = Math.max(1, (String(Number(step.toPrecision(6))).split('.')[1] ?? '').length);
    for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + 1e-9; i++) parts.push(tick(i * step, (i * step).toFixed(decimals)));
  };
  ticks(xlo, xhi, (v, text) => `<text x="${px(v).toFixed(1)}" y="${MARGIN.top + plot + 16}" text-anchor="middle">${text}</text>`);
  ticks(ylo, yhi, (v, text) => `<text x="${MARGIN.left - 6}" y="${py(v).toFixed(1)}" text-anchor="end" dominant-baseline="middle">${text}</text>`);
  // The diagonal y = x where it crosses the plot.
  const dlo = Math.max(xlo, ylo);
  const dhi = Math.min(xhi, yhi);
  if (options.diagonal && dlo < dhi) {
    parts.push(`<line x1="${px(dlo).toFixed(1)}" y1="${py(dlo).toFixed(1)}" x2="${px(dhi).toFixed(1)}" y2="${py(dhi).toFixed(1)}" stroke="#999" stroke-dasharray="4 3"/>`);
  }
  for (const p of points) {
    if (!Number.isFinite(p.x) || !Number.isFinite(p.y) || !inside(p)) continue;
    const colour = p.y < p.x ? '#1f77b4' : '#d62728';
    parts.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="1.6" fill="${colour}" fill-opacity="0.5"/>`);
  }
  for (const series of options.series ?? []) {
    for (const p of series.points) {
      if (!Number.isFinite(p.x) || !Number.isFinite(p.y) || !inside(p)) continue;
      parts.push(`<rect x="${(px(p.x) - 1.5).toFixed(1)}" y="${(py(p.y) - 1.5).toFixed(1)}" width="3" height="3" fill="${series.colour}" fill-opacity="0.5"/>`);
    }
  }
  const main = options.mainLabel ?? 'points';
  const entries: Array<{ name: string; colour: string; square: boolean }> = [
    { name: `${main}, y < x`, colour: '#1f77b4', square: false },
    { name: `${main}, y >= x`, colour: '#d62728', square: false },
    ...(options.series ?? []).map((s) => ({ name: s.name, colour: s.colour, square: true })),
  ];
  const legendTop = MARGIN.top + plot + MARGIN.bottom;
  entries.forEach((e, i) => {
    const y = legendTop + i * LEGEND_ROW + LEGEND_ROW / 2;
    parts.push(
      `<g class="legend">${
        e.square ? `<rect x="${MARGIN.left + 8}" y="${y - 4}" width="8" height="8" fill="${e.colour}"/>` : `<circle cx="${MARGIN.left + 12}" cy="${y}" r="4" fill="${e.colour}"/>`
      }`,
      `<text x="${MARGIN.left + 22}" y="${y}" dominant-baseline="middle" font-size="11">${escapeXml(e.name)}</text></g>`,
    );
  });
  if (outside > 0) {
    const y = legendTop + entries.length * LEGEND_ROW + LEGEND_ROW / 2;
    parts.push(`<text class="outside" x="${MARGIN.left + 8}" y="${y}" dominant-baseline="middle" font-size="11">${outside} of ${all.length} points lie outside these axes (not drawn)</text>`);
  }
  parts.push(
    `<text x="${MARGIN.left + plot / 2}" y="${legendTop - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(14 ${MARGIN.top + plot / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
    '</svg>',
  );
  return parts.join('\n');
}

/** One histogram series: counts of values in equal-width bins over `range`. */
export interface HistogramSeries {
  name: string;
  counts: number[];
}

/** Overlaid histograms (as step outlines), normalised to fractions so series of different sizes compare. */
export function histogramSvg(series: HistogramSeries[], range: [number, number], options: { title: string; xLabel: string; width?: number; height?: number }): string {
  const width = options.width ?? 560;
  const height = options.height ?? 320;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const fractions = series.map((s) => {
    const total = s.counts.reduce((a, b) => a + b, 0) || 1;
    return s.counts.map((c) => c / total);
  });
  const yMax = Math.max(1e-9, ...fractions.flat());
  const colours = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e'];
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = range[0] + ((range[1] - range[0]) * i) / 4;
    parts.push(`<text x="${(MARGIN.left + (plotW * i) / 4).toFixed(1)}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${v.toFixed(1)}</text>`);
  }
  fractions.forEach((f, si) => {
    const colour = colours[si % colours.length] as string;
    const bw = plotW / Math.max(1, f.length);
    const pts: string[] = [];
    f.forEach((v, i) => {
      const y = MARGIN.top + plotH - (v / yMax) * plotH;
      pts.push(`${(MARGIN.left + i * bw).toFixed(1)},${y.toFixed(1)}`, `${(MARGIN.left + (i + 1) * bw).toFixed(1)},${y.toFixed(1)}`);
    });
    parts.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${pts.join(' ')}"/>`,
      `<rect x="${MARGIN.left + 10}" y="${MARGIN.top + 6 + si * 16}" width="12" height="12" fill="${colour}"/>`,
      `<text x="${MARGIN.left + 28}" y="${MARGIN.top + 16 + si * 16}">${escapeXml(series[si]?.name ?? '')}</text>`,
    );
  });
  parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`, '</svg>');
  return parts.join('\n');
}
