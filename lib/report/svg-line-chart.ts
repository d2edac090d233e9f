/**
 * @file A small SVG line chart (axes, ticks, polylines with markers, legend) built as a string, so
 * reports need no browser, canvas or network. Used for the Recall@K and NMI+ plots.
 */

/** One line of a chart. */
export interface ChartSeries {
  name: string;
  points: Array<{ x: number; y: number }>;
  /** CSS colour of the line; default: the next of the chart's palette. */
  colour?: string;
  /** Opacity of the line (a raw series under its smoothed one); default 1. */
  opacity?: number;
}

/** Chart settings. */
export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Logarithmic x axis (base 10 ticks at the data's x values). */
  logX?: boolean;
  /**
   * Where the x ticks go: `values` (default), a tick and grid line at every x of the data (a few K or
   * epochs); `linear`, round ticks over the data's range (steps of a training run, thousands of x).
   */
  xTicks?: 'values' | 'linear';
  /** Draw a dot at each point (default true; off for series of many points). */
  markers?: boolean;
  /** y range; default [0, 1]. */
  yRange?: [number, number];
  width?: number;
  /** Height of the plot and its axes; the legend below adds a row per series. Default 400. */
  height?: number;
}

/** The palette series take in turn (exported so a page can give one run the same colour in every chart). */
export const CHART_COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

/** Escapes text for SVG/HTML content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const fmt = (v: number, decimals = 2): string => (Number.isInteger(v) ? String(v) : v.toFixed(decimals));

/** A round tick step (1, 2 or 5 times a power of ten) giving 4 to 10 ticks over `span`. */
export function tickStep(span: number): number {
  const raw = span / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return (unit < 1.5 ? 1 : unit < 3.5 ? 2 : unit < 7.5 ? 5 : 10) * power;
}

/**
 * An axis range that shows where `values` are: from the smallest to the largest, widened by a tenth of
 * their spread (at least `minPad`, default 0.02, and `minPad` / 2 of the largest magnitude), rounded out to the
 * {@link tickStep} of the widened span and kept within `bounds` when given. [0, 1] (or `bounds`)
 * when there is no finite value.
 */
export function fittedRange(values: readonly number[], bounds?: readonly [number, number], minPad = 0.02): [number, number] {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return bounds ? [bounds[0], bounds[1]] : [0, 1];
  const min = Math.min(...finite);
  const max = Math.max(...finite);
  const pad = Math.max(minPad, (max - min) / 10, Math.max(Math.abs(min), Math.abs(max)) * minPad / 2);
  const step = tickStep(max - min + 2 * pad);
  let lo = Math.floor((min - pad) / step + 1e-9) * step;
  let hi = Math.ceil((max + pad) / step - 1e-9) * step;
  if (bounds) {
    lo = Math.max(bounds[0], lo);
    hi = Math.min(bounds[1], hi);
  }
  return [Number(lo.toPrecision(12)), Number(hi.toPrecision(12))];
}

/** Height of one legend row below the plot. */
export const LEGEND_ROW = 18;

/**
 * Renders the series as a standalone `<svg>` element. The legend sits below the x axis label, one row
 * per series, so it never covers a curve.
 */
export function lineChartSvg(series: ChartSeries[], options: LineChartOptions): string {
  const width = options.width ?? 640;
  const axesHeight = options.height ?? 400;
  const height = axesHeight + series.length * LEGEND_ROW;
  const margin = { left: 64, right: 24, top: 40, bottom: 56 };
  const plotW = width - margin.left - margin.right;
  const plotH = axesHeight - margin.top - margin.bottom;
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const tx = (x: number): number => (options.logX ? Math.log10(x) : x);
  const xMin = xs.length > 0 ? tx(xs[0] as number) : 0;
  const xMax = xs.length > 0 ? tx(xs[xs.length - 1] as number) : 1;
  const xSpan = xMax - xMin || 1;
  const [yMin, yMax] = options.yRange ?? [0, 1];
  const ySpan = yMax - yMin || 1;
  const yStep = tickStep(ySpan);
  // Enough decimals for the step (0.01 -> 2, 0.005 -> 3), at least 2.
  const yDecimals = Math.max(2, (String(Number(yStep.toPrecision(6))).split('.')[1] ?? '').length);
  const px = (x: number): number => margin.left + (xs.length === 1 ? plotW / 2 : ((tx(x) - xMin) / xSpan) * plotW);
  const linearTicks = options.xTicks === 'linear' && !options.logX && xs.length > 1;
  const py = (y: number): number => margin.top + plotH - ((y - yMin) / ySpan) * plotH;

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(options.title)}</text>`,
  );
  for (let i = Math.ceil(yMin / yStep - 1e-9); i * yStep <= yMax + 1e-9; i++) {
    const y = i * yStep;
    const yy = py(y).toFixed(1);
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${yy}" y2="${yy}" stroke="#ddd"/>`,
      `<text x="${margin.left - 8}" y="${yy}" text-anchor="end" dominant-baseline="middle">${fmt(Number(y.toFixed(6)), yDecimals)}</text>`,
    );
  }
  const xStep = tickStep(xSpan);
  const tickXs = linearTicks
    ? Array.from({ length: Math.floor(xMax / xStep + 1e-9) - Math.ceil(xMin / xStep - 1e-9) + 1 }, (_, i) => Number(((Math.ceil(xMin / xStep - 1e-9) + i) * xStep).toPrecision(12)))
    : xs;
  for (const x of tickXs) {
    const xx = px(x).toFixed(1);
    parts.push(
      `<line x1="${xx}" x2="${xx}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#eee"/>`,
      `<text x="${xx}" y="${margin.top + plotH + 18}" text-anchor="middle">${fmt(x)}</text>`,
    );
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#444"/>`,
    `<text x="${margin.left + plotW / 2}" y="${axesHeight - 14}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const colour = s.colour ?? (CHART_COLOURS[i % CHART_COLOURS.length] as string);
    const pts = s.points.filter((p) => Number.isFinite(p.y)).map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`);
    const opacity = s.opacity !== undefined && s.opacity < 1 ? ` stroke-opacity="${s.opacity}"` : '';
    if (pts.length > 1) parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="2"${opacity} points="${pts.join(' ')}"/>`);
    // A lone point is drawn as a dot even without markers, or it would not show at all.
    for (const pt of options.markers === false && pts.length > 1 ? [] : pts) {
      const [cx, cy] = pt.split(',');
      parts.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${colour}"/>`);
    }
    const ly = axesHeight + i * LEGEND_ROW + LEGEND_ROW / 2;
    parts.push(
      `<g class="legend"><rect x="${margin.left}" y="${ly - 6}" width="12" height="12" fill="${colour}"${opacity.replace('stroke-', 'fill-')}/>`,
      `<text x="${margin.left + 18}" y="${ly}" dominant-baseline="middle">${escapeXml(s.name)}</text></g>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
