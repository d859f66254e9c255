import { axesFor, type Axis } from './axes.js';
import { figureHasData, type Figure, type FigureSeries } from './figure.js';
import { drawSeries, placeAxes, type Box, type PlacedAxes } from './marks.js';
import {
  axisColor,
  bandOpacity,
  escapeXml,
  font,
  glyphWidth,
  gridColor,
  mutedColor,
  px,
  textColor,
} from './markup.js';

export { escapeXml } from './markup.js';

/**
 * The one static-SVG renderer of teamtr's figures (report, docs, the theory lab): lines, points
 * and grouped bars on linear, logarithmic or categorical axes, intervals as shaded bands, with
 * ticks, grid, axis labels, a legend and, on request, the caption. The output is a standalone
 * SVG document (no scripts, fonts or external references), so it can be inlined in HTML or
 * included in a paper as is.
 */

export interface SvgChartOptions {
  /** @default 720 */
  width?: number;
  /** Height without the caption (the caption adds its own lines). @default 420 */
  height?: number;
  /** Draw the figure's title above the plot. @default true */
  includeTitle?: boolean;
  /**
   * Draw the figure's description under the legend, as a paper's caption (docs figures; the
   * HTML report prints it beside the figure instead). @default false
   */
  caption?: boolean;
}

interface LegendItem {
  series: FigureSeries;
  /** The entry of the series' shaded band rather than of its line. */
  band: boolean;
  x: number;
  y: number;
}

const legendRowHeight = 18;
const captionLineHeight = 16;

export function renderSvgChart(figure: Figure, options: SvgChartOptions = {}): string {
  const width = options.width ?? 720;
  const includeTitle = options.includeTitle ?? true;
  const titleHeight = includeTitle ? 30 : 0;
  const legend = layoutLegend(figure.series, width - 24);
  const caption = options.caption ? wrapText(figure.description, width - 24) : [];
  const captionHeight = caption.length ? caption.length * captionLineHeight + 8 : 0;
  const height = (options.height ?? 420) + captionHeight;
  const axes = figureHasData(figure) ? axesFor(figure) : null;
  const yTickWidth = axes
    ? Math.max(...axes.y.labels.map((label) => label.length)) * glyphWidth
    : 12;
  const plot: Box = {
    left: Math.round(34 + yTickWidth),
    top: titleHeight + 12,
    width: 0,
    height: 0,
  };
  plot.width = width - plot.left - 16;
  plot.height = height - captionHeight - plot.top - 52 - legend.height;
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
    parts.push(...drawGrid(placed, plot));
    parts.push(...drawSeries(figure, placed, plot));
  } else {
    parts.push(
      `<rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}" fill="#f9fafb" stroke="${gridColor}"/>`,
      `<text x="${px(plot.left + plot.width / 2)}" y="${px(plot.top + plot.height / 2)}" text-anchor="middle" fill="${mutedColor}" font-size="14">no data yet</text>`,
    );
  }
  parts.push(...drawAxisLabels(figure, plot));
  parts.push(...drawLegend(legend.items, plot.top + plot.height + 50));
  const captionTop = plot.top + plot.height + 52 + legend.height + 8;
  caption.forEach((line, index) =>
    parts.push(
      `<text x="12" y="${px(captionTop + index * captionLineHeight + 12)}" fill="${textColor}">${escapeXml(line)}</text>`,
    ),
  );
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

function drawGrid(axes: PlacedAxes, plot: Box): string[] {
  const parts: string[] = [];
  const bottom = plot.top + plot.height;
  const isZero = (axis: Axis, tick: number) => tick === 0 && axis.transform(0) === 0;
  axes.y.ticks.forEach((tick, index) => {
    const y = axes.toY(tick);
    parts.push(
      `<line x1="${px(plot.left)}" x2="${px(plot.left + plot.width)}" y1="${px(y)}" y2="${px(y)}" stroke="${isZero(axes.y, tick) ? axisColor : gridColor}" stroke-width="1"/>`,
      `<text x="${px(plot.left - 6)}" y="${px(y + 4)}" text-anchor="end" fill="${mutedColor}">${escapeXml(axes.y.labels[index]!)}</text>`,
    );
  });
  axes.x.ticks.forEach((tick, index) => {
    const x = axes.toX(tick);
    parts.push(
      `<line x1="${px(x)}" x2="${px(x)}" y1="${px(bottom)}" y2="${px(bottom + 4)}" stroke="${axisColor}"/>`,
      `<text x="${px(x)}" y="${px(bottom + 17)}" text-anchor="middle" fill="${mutedColor}">${escapeXml(axes.x.labels[index]!)}</text>`,
    );
  });
  parts.push(
    `<rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}" fill="none" stroke="${axisColor}"/>`,
  );
  return parts;
}

function drawAxisLabels(figure: Figure, plot: Box): string[] {
  const centerX = plot.left + plot.width / 2;
  const centerY = plot.top + plot.height / 2;
  return [
    `<text x="${px(centerX)}" y="${px(plot.top + plot.height + 36)}" text-anchor="middle" fill="${textColor}">${escapeXml(figure.xLabel)}</text>`,
    `<text transform="translate(14 ${px(centerY)}) rotate(-90)" text-anchor="middle" fill="${textColor}">${escapeXml(figure.yLabel)}</text>`,
  ];
}

/** Words in lines that fit `availableWidth` at the estimated glyph width. */
function wrapText(text: string, availableWidth: number): string[] {
  const perLine = Math.max(20, Math.floor(availableWidth / glyphWidth));
  const lines: string[] = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= perLine) {
      lines[lines.length - 1] = `${last} ${word}`;
    } else lines.push(word);
  }
  return lines;
}

/**
 * Legend entries flow left to right and wrap into rows that fit the chart's width; a series
 * with an empty label (the fitted line of a series, say) has no entry, a shaded band with a
 * `bandLabel` has its own after its series'.
 */
function layoutLegend(
  series: readonly FigureSeries[],
  availableWidth: number,
): { items: LegendItem[]; height: number } {
  const entries = series.flatMap((entry) => [
    ...(entry.label !== '' ? [{ series: entry, band: false, label: entry.label }] : []),
    ...(entry.bandLabel ? [{ series: entry, band: true, label: entry.bandLabel }] : []),
  ]);
  const items: LegendItem[] = [];
  let x = 0;
  let row = 0;
  for (const entry of entries) {
    const itemWidth = 30 + entry.label.length * glyphWidth + 14;
    if (x > 0 && x + itemWidth > availableWidth) {
      row++;
      x = 0;
    }
    items.push({ series: entry.series, band: entry.band, x: 12 + x, y: row * legendRowHeight });
    x += itemWidth;
  }
  return { items, height: entries.length ? (row + 1) * legendRowHeight : 0 };
}

function swatchOf(series: FigureSeries, band: boolean, x: number, middle: number): string {
  if (band) {
    return `<rect x="${px(x)}" y="${px(middle - 5)}" width="24" height="10" fill="${series.color}" fill-opacity="${bandOpacity}"/>`;
  }
  if (series.style === 'bars') {
    return `<rect x="${px(x + 6)}" y="${px(middle - 5)}" width="12" height="10" fill="${series.color}"/>`;
  }
  if (series.style === 'points') {
    return `<circle cx="${px(x + 12)}" cy="${px(middle)}" r="4" fill="${series.color}"/>`;
  }
  return `<line x1="${px(x)}" x2="${px(x + 24)}" y1="${px(middle)}" y2="${px(middle)}" stroke="${series.color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="6 4"' : ''}/>`;
}

function drawLegend(items: readonly LegendItem[], top: number): string[] {
  return items.flatMap(({ series, band, x, y }) => {
    const middle = top + y + 6;
    const label = band ? series.bandLabel! : series.label;
    return [
      swatchOf(series, band, x, middle),
      `<text x="${px(x + 30)}" y="${px(middle + 4)}" fill="${textColor}">${escapeXml(label)}</text>`,
    ];
  });
}
