/**
 * The figure model shared by every figure teamtr draws — the report and the docs (SVG, drawn by
 * svg.ts) and the dashboard (uPlot, drawn in the browser): plain data, no drawing code, so all
 * show the same numbers the same way.
 *
 * How a figure should read (docs/guides/statistics.md, STYLE.md): one distinct colour-blind-safe
 * colour per series (palette.ts), intervals as shaded bands (points with `low`/`high`), axes
 * fitted to the data (the renderer's default; fix bounds only where they mean something), and
 * the takeaway in the caption (`description`, drawn under the chart with `caption: true`).
 */

/** How a series is drawn: a line through its points, its points alone, or bars. */
export type SeriesStyle = 'line' | 'points' | 'bars';

export interface FigurePoint {
  x: number;
  y: number;
  /** An interval around y (a confidence interval, a seed band): drawn as a shaded band. */
  low?: number;
  high?: number;
}

/** How an axis maps values: linear, or logarithmic (values ≤ 0 are not drawn). */
export type AxisScale = 'linear' | 'log';

export interface FigureSeries {
  label: string;
  /** CSS color (hex). */
  color: string;
  style: SeriesStyle;
  /** Dashed line (reference lines, bounds). */
  dashed?: boolean;
  /** Draw a marker at every point of a line. */
  markers?: boolean;
  /** Points in drawing order; a line joins consecutive points. */
  points: FigurePoint[];
  /** Legend entry of the shaded band the points' low/high draw (none without it). */
  bandLabel?: string;
}

export interface Figure {
  /** Stable identifier: file name of the SVG, key of the dashboard panel. */
  id: string;
  title: string;
  /** What the figure shows and what to look for, one or two sentences. */
  description: string;
  xLabel: string;
  yLabel: string;
  /** Labels of a categorical x axis: point x = index into this list. */
  xCategories?: string[];
  /** The x values are counts (stages, positions): ticks only at whole numbers. */
  xIntegers?: boolean;
  /** Fixed bounds of the y axis (e.g. 0..1 for an accuracy); data may widen them. */
  yMin?: number;
  yMax?: number;
  /** @default 'linear' */
  xScale?: AxisScale;
  /** @default 'linear' */
  yScale?: AxisScale;
  /** Where the x ticks go (e.g. the team sizes), instead of evenly spaced ones. */
  xTicks?: number[];
  /** Only series with at least one point: an empty list means there is no data yet. */
  series: FigureSeries[];
  /** Short facts next to the figure, e.g. rank correlations or out-of-region rates per run. */
  notes: string[];
}

/** Whether there is anything to draw: at least one finite point. */
export function figureHasData(figure: Figure): boolean {
  return figure.series.some((series) =>
    series.points.some((point) => Number.isFinite(point.x) && Number.isFinite(point.y)),
  );
}
