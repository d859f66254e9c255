import { figureHasData, type Figure, type FigureSeries } from './figure.js';
import { formatTicks, niceScale, type NiceScale } from './ticks.js';

/**
 * A small SVG chart renderer for report figures: lines, points and grouped bars on linear or
 * categorical axes, with ticks, grid, axis labels and a legend. The output is a standalone SVG
 * document (no scripts, fonts or external references), so it can be inlined in HTML or
 * included in a paper as is.
 */

export interface SvgChartOptions {
  /** @default 720 */
  width?: number;
  /** @default 420 */
  height?: number;
  /** Draw the figure's title above the plot. @default true */
  includeTitle?: boolean;
}

interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

interface LegendItem {
  series: FigureSeries;
  x: number;
  y: number;
}

interface Axes {
  x: NiceScale;
  y: NiceScale;
  toX: (value: number) => number;
  toY: (value: number) => number;
}

const font = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
const textColor = '#1f2937';
const mutedColor = '#6b7280';
const gridColor = '#e5e7eb';
const axisColor = '#9ca3af';
/** Rough advance of a 12 px sans-serif glyph, for layout without measuring text. */
const glyphWidth = 6.3;
const legendRowHeight = 18;

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A number for an SVG attribute: two decimals are sub-pixel accurate and keep files small. */
function px(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/** A safe fragment for element ids (figure ids become part of clip-path ids). */
function idFragment(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '-');
}

export function renderSvgChart(figure: Figure, options: SvgChartOptions = {}): string {
  const width = options.width ?? 720;
  const height = options.height ?? 420;
  const includeTitle = options.includeTitle ?? true;
  const titleHeight = includeTitle ? 30 : 0;
  const legend = layoutLegend(figure.series, width - 24);
  const axes = figureHasData(figure) ? scalesFor(figure) : null;
  const yTickWidth = axes
    ? Math.max(...formatTicks(axes.y.ticks, axes.y.step).map((label) => label.length)) * glyphWidth
    : 12;
  const plot: Box = {
    left: Math.round(34 + yTickWidth),
    top: titleHeight + 12,
    width: 0,
    height: 0,
  };
  plot.width = width - plot.left - 16;
  plot.height = height - plot.top - 52 - legend.height;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(figure.title)}" font-family="${escapeXml(font)}" font-size="12">`,
    `<title>${escapeXml(figure.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
  );
  if (includeTitle) {
    parts.push(
      `<text x="${px(plot.left)}" y="22" font-size="15" font-weight="600" fill="${textColor}">${escapeXml(figure.title)}</text>`,
    );
  }
  if (axes) {
    const placed = placeAxes(axes.x, axes.y, plot);
    parts.push(...drawGrid(figure, placed, plot));
    parts.push(...drawSeries(figure, placed, plot));
  } else {
    parts.push(
      `<rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}" fill="#f9fafb" stroke="${gridColor}"/>`,
      `<text x="${px(plot.left + plot.width / 2)}" y="${px(plot.top + plot.height / 2)}" text-anchor="middle" fill="${mutedColor}" font-size="14">no data yet</text>`,
    );
  }
  parts.push(...drawAxisLabels(figure, plot));
  parts.push(...drawLegend(legend.items, plot.top + plot.height + 50));
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

function scalesFor(figure: Figure): { x: NiceScale; y: NiceScale } {
  const points = figure.series
    .flatMap((series) => series.points)
    .filter((point) => Number.isFinite(point.x) && Number.isFinite(point.y));
  const hasBars = figure.series.some((series) => series.style === 'bars');
  // Loops, not Math.min(...values): a long run has more points than a call takes arguments.
  let yLow = Math.min(figure.yMin ?? Infinity, hasBars ? 0 : Infinity);
  let yHigh = Math.max(figure.yMax ?? -Infinity, hasBars ? 0 : -Infinity);
  let xLow = Infinity;
  let xHigh = -Infinity;
  for (const point of points) {
    yLow = Math.min(yLow, point.y);
    yHigh = Math.max(yHigh, point.y);
    xLow = Math.min(xLow, point.x);
    xHigh = Math.max(xHigh, point.x);
  }
  const y = niceScale({ min: yLow, max: yHigh, targetTicks: 5 });
  if (figure.xCategories) {
    const count = Math.max(1, figure.xCategories.length);
    const ticks = figure.xCategories.map((_label, index) => index);
    return { x: { min: -0.5, max: count - 0.5, step: 1, ticks }, y };
  }
  return {
    x: padded(linearXScale(xLow, xHigh, figure.xIntegers ?? false)),
    y,
  };
}

/**
 * The x axis spans the data exactly (no padding to nice bounds); ticks fall inside it. Counts
 * (stages, positions) over a short range get a tick at every whole number instead of halves.
 */
function linearXScale(low: number, high: number, integers: boolean): NiceScale {
  const pad = low !== high ? 0 : integers || low === 0 ? 1 : Math.abs(low) * 0.1;
  const min = low - pad;
  const max = high + pad;
  if (integers && max - min <= 8) {
    const ticks: number[] = [];
    for (let tick = Math.ceil(min); tick <= max; tick++) ticks.push(tick);
    return { min, max, step: 1, ticks };
  }
  const nice = niceScale({ min, max, targetTicks: 6 });
  const tolerance = 1e-9 * (max - min);
  return {
    min,
    max,
    step: nice.step,
    ticks: nice.ticks.filter((tick) => tick >= min - tolerance && tick <= max + tolerance),
  };
}

/** A little room on both sides so markers at the ends are not cut in half. */
function padded(scale: NiceScale): NiceScale {
  const pad = 0.02 * (scale.max - scale.min);
  return { ...scale, min: scale.min - pad, max: scale.max + pad };
}

function placeAxes(x: NiceScale, y: NiceScale, plot: Box): Axes {
  const toX = (value: number) => plot.left + ((value - x.min) / (x.max - x.min)) * plot.width;
  const toY = (value: number) =>
    plot.top + plot.height - ((value - y.min) / (y.max - y.min)) * plot.height;
  return { x, y, toX, toY };
}

function drawGrid(figure: Figure, axes: Axes, plot: Box): string[] {
  const parts: string[] = [];
  const bottom = plot.top + plot.height;
  const yLabels = formatTicks(axes.y.ticks, axes.y.step);
  axes.y.ticks.forEach((tick, index) => {
    const y = axes.toY(tick);
    parts.push(
      `<line x1="${px(plot.left)}" x2="${px(plot.left + plot.width)}" y1="${px(y)}" y2="${px(y)}" stroke="${tick === 0 ? axisColor : gridColor}" stroke-width="1"/>`,
      `<text x="${px(plot.left - 6)}" y="${px(y + 4)}" text-anchor="end" fill="${mutedColor}">${escapeXml(yLabels[index]!)}</text>`,
    );
  });
  const xLabels = figure.xCategories
    ? axes.x.ticks.map((tick) => figure.xCategories![tick] ?? '')
    : formatTicks(axes.x.ticks, axes.x.step);
  axes.x.ticks.forEach((tick, index) => {
    const x = axes.toX(tick);
    parts.push(
      `<line x1="${px(x)}" x2="${px(x)}" y1="${px(bottom)}" y2="${px(bottom + 4)}" stroke="${axisColor}"/>`,
      `<text x="${px(x)}" y="${px(bottom + 17)}" text-anchor="middle" fill="${mutedColor}">${escapeXml(xLabels[index]!)}</text>`,
    );
  });
  parts.push(
    `<rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}" fill="none" stroke="${axisColor}"/>`,
  );
  return parts;
}

function drawSeries(figure: Figure, axes: Axes, plot: Box): string[] {
  const clipId = `clip-${idFragment(figure.id)}`;
  const parts = [
    `<clipPath id="${clipId}"><rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}"/></clipPath>`,
    `<g clip-path="url(#${clipId})">`,
  ];
  const barSeries = figure.series.filter((series) => series.style === 'bars');
  barSeries.forEach((series, index) =>
    parts.push(...drawBars(series, index, barSeries.length, axes)),
  );
  for (const series of figure.series) {
    const points = series.points.filter(
      (point) => Number.isFinite(point.x) && Number.isFinite(point.y),
    );
    if (series.style === 'line' && points.length > 1) {
      const path = points
        .map(
          (point, index) =>
            `${index === 0 ? 'M' : 'L'}${px(axes.toX(point.x))},${px(axes.toY(point.y))}`,
        )
        .join('');
      const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
      parts.push(
        `<path d="${path}" fill="none" stroke="${series.color}" stroke-width="2" stroke-linejoin="round"${dash}/>`,
      );
    }
    const showMarkers =
      series.style === 'points' ||
      (series.style === 'line' && (series.markers || points.length === 1));
    if (showMarkers) {
      const radius = series.style === 'points' ? 3.5 : 3;
      for (const point of points) {
        parts.push(
          `<circle cx="${px(axes.toX(point.x))}" cy="${px(axes.toY(point.y))}" r="${radius}" fill="${series.color}" stroke="#ffffff" stroke-width="0.8"/>`,
        );
      }
    }
  }
  parts.push('</g>');
  return parts;
}

/** Bars of one series, side by side with the other bar series inside each category's slot. */
function drawBars(series: FigureSeries, index: number, count: number, axes: Axes): string[] {
  const slot = (axes.toX(1) - axes.toX(0)) * 0.8;
  const barWidth = slot / count;
  const baseline = axes.toY(Math.max(axes.y.min, Math.min(0, axes.y.max)));
  return series.points
    .filter((point) => Number.isFinite(point.x) && Number.isFinite(point.y))
    .map((point) => {
      const left = axes.toX(point.x) - slot / 2 + index * barWidth;
      const top = axes.toY(point.y);
      const y = Math.min(top, baseline);
      const height = Math.max(Math.abs(baseline - top), 0.5);
      return `<rect x="${px(left + 0.5)}" y="${px(y)}" width="${px(Math.max(barWidth - 1, 1))}" height="${px(height)}" fill="${series.color}"/>`;
    });
}

function drawAxisLabels(figure: Figure, plot: Box): string[] {
  const centerX = plot.left + plot.width / 2;
  const centerY = plot.top + plot.height / 2;
  return [
    `<text x="${px(centerX)}" y="${px(plot.top + plot.height + 36)}" text-anchor="middle" fill="${textColor}">${escapeXml(figure.xLabel)}</text>`,
    `<text transform="translate(14 ${px(centerY)}) rotate(-90)" text-anchor="middle" fill="${textColor}">${escapeXml(figure.yLabel)}</text>`,
  ];
}

/**
 * Legend entries flow left to right and wrap into rows that fit the chart's width; a series
 * with an empty label (the second line of a band, say) has no entry.
 */
function layoutLegend(
  series: readonly FigureSeries[],
  availableWidth: number,
): { items: LegendItem[]; height: number } {
  const items: LegendItem[] = [];
  let x = 0;
  let row = 0;
  const labeled = series.filter((entry) => entry.label !== '');
  for (const entry of labeled) {
    const itemWidth = 30 + entry.label.length * glyphWidth + 14;
    if (x > 0 && x + itemWidth > availableWidth) {
      row++;
      x = 0;
    }
    items.push({ series: entry, x: 12 + x, y: row * legendRowHeight });
    x += itemWidth;
  }
  return { items, height: labeled.length ? (row + 1) * legendRowHeight : 0 };
}

function drawLegend(items: readonly LegendItem[], top: number): string[] {
  return items.flatMap(({ series, x, y }) => {
    const middle = top + y + 6;
    const swatch =
      series.style === 'bars'
        ? `<rect x="${px(x + 6)}" y="${px(middle - 5)}" width="12" height="10" fill="${series.color}"/>`
        : series.style === 'points'
          ? `<circle cx="${px(x + 12)}" cy="${px(middle)}" r="4" fill="${series.color}"/>`
          : `<line x1="${px(x)}" x2="${px(x + 24)}" y1="${px(middle)}" y2="${px(middle)}" stroke="${series.color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="6 4"' : ''}/>`;
    return [
      swatch,
      `<text x="${px(x + 30)}" y="${px(middle + 4)}" fill="${textColor}">${escapeXml(series.label)}</text>`,
    ];
  });
}
