/**
 * @file A horizontal bar chart as an SVG string: one row per category (a class), one bar per series
 * (a model) in the series' colour, the value written after each bar, the legend below the bars.
 * Used for the per-class Recall@1 view of the evaluation report.
 */
import { CHART_COLOURS, escapeXml, LEGEND_ROW } from './svg-line-chart.js';

/** One category of a bar chart: its label and one value per series (NaN: no bar). */
export interface BarRow {
  label: string;
  values: number[];
}

/** Settings of {@link barChartSvg}. */
export interface BarChartOptions {
  title: string;
  /** Legend names of the series, in the order of each row's values. */
  series: string[];
  /** The values' range (bars start at its low end); default [0, 1]. */
  range?: [number, number];
  /** How a value is written after its bar; default as a percentage with 1 decimal. */
  format?: (v: number) => string;
  width?: number;
}

const BAR = 12;
const GAP = 6;
const LABEL_WIDTH = 180;

/** Renders `rows` top to bottom (see the file comment); a label longer than fits is cut with an ellipsis and kept whole in its tooltip. */
export function barChartSvg(rows: readonly BarRow[], options: BarChartOptions): string {
  const width = options.width ?? 640;
  const [lo, hi] = options.range ?? [0, 1];
  const format = options.format ?? ((v: number) => `${(100 * v).toFixed(1)}`);
  const seriesCount = Math.max(1, options.series.length);
  const rowHeight = seriesCount * BAR + GAP;
  const top = 36;
  const plotW = width - LABEL_WIDTH - 60;
  const plotBottom = top + rows.length * rowHeight;
  const height = plotBottom + 12 + seriesCount * LEGEND_ROW;
  const x = (v: number): number => LABEL_WIDTH + ((Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo || 1)) * plotW;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`,
    `<rect x="${LABEL_WIDTH}" y="${top}" width="${plotW}" height="${plotBottom - top}" fill="none" stroke="#444"/>`,
  ];
  rows.forEach((row, r) => {
    const y0 = top + r * rowHeight + GAP / 2;
    const label = row.label.length > 28 ? `${row.label.slice(0, 27)}…` : row.label;
    parts.push(`<text class="bar-label" x="${LABEL_WIDTH - 6}" y="${(y0 + (seriesCount * BAR) / 2).toFixed(1)}" text-anchor="end" dominant-baseline="middle"><title>${escapeXml(row.label)}</title>${escapeXml(label)}</text>`);
    row.values.forEach((v, s) => {
      if (!Number.isFinite(v)) return;
      const y = y0 + s * BAR;
      const colour = CHART_COLOURS[s % CHART_COLOURS.length] as string;
      parts.push(
        `<rect class="bar" data-value="${v}" x="${LABEL_WIDTH}" y="${y.toFixed(1)}" width="${(x(v) - LABEL_WIDTH).toFixed(1)}" height="${BAR - 2}" fill="${colour}"/>`,
        `<text x="${(x(v) + 4).toFixed(1)}" y="${(y + BAR / 2 - 1).toFixed(1)}" dominant-baseline="middle">${escapeXml(format(v))}</text>`,
      );
    });
  });
  options.series.forEach((name, s) => {
    const ly = plotBottom + 12 + s * LEGEND_ROW + LEGEND_ROW / 2;
    parts.push(
      `<g class="legend"><rect x="${LABEL_WIDTH}" y="${ly - 6}" width="12" height="12" fill="${CHART_COLOURS[s % CHART_COLOURS.length]}"/>`,
      `<text x="${LABEL_WIDTH + 18}" y="${ly}" dominant-baseline="middle">${escapeXml(name)}</text></g>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
