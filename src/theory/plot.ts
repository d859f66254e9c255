/**
 * A log-log scatter plot with fitted power-law lines, rendered as a standalone SVG string (no
 * plotting library: axes, decade ticks, points with ±SE bars, fit lines and a legend).
 */
export interface PlotPoint {
  readonly x: number;
  readonly y: number;
  /** Optional error bar, drawn when both ends are positive. */
  readonly low?: number;
  readonly high?: number;
}

export interface PlotSeries {
  readonly label: string;
  readonly color: string;
  readonly points: readonly PlotPoint[];
  /** log y = intercept + slope · log x, drawn across the x range. */
  readonly fit?: { readonly slope: number; readonly intercept: number } | null;
  readonly dashed?: boolean;
}

export interface LogLogPlot {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly PlotSeries[];
  /** Where to put x tick labels (e.g. the team sizes). */
  readonly xTicks: readonly number[];
}

const width = 720;
const height = 480;
const margin = { left: 80, right: 250, top: 48, bottom: 60 };

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

function format(value: number): string {
  return Number(value.toFixed(2)).toString();
}

interface Scale {
  readonly toX: (value: number) => number;
  readonly toY: (value: number) => number;
  readonly yDecades: readonly number[];
}

function buildScale(plot: LogLogPlot): Scale {
  const xs = [
    ...plot.xTicks,
    ...plot.series.flatMap((series) => series.points.map((point) => point.x)),
  ];
  const ys = plot.series
    .flatMap((series) =>
      series.points.flatMap((point) => [point.y, point.low ?? point.y, point.high ?? point.y]),
    )
    .filter((value) => value > 0 && Number.isFinite(value));
  const xLow = Math.log10(Math.min(...xs)) - 0.05;
  const xHigh = Math.log10(Math.max(...xs)) + 0.05;
  const yLow = Math.floor(Math.log10(ys.length ? Math.min(...ys) : 1e-3));
  const yHigh = Math.ceil(Math.log10(ys.length ? Math.max(...ys) : 1));
  const yTop = yHigh > yLow ? yHigh : yLow + 1;
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const yDecades: number[] = [];
  for (let decade = yLow; decade <= yTop; decade++) yDecades.push(decade);
  return {
    toX: (value) => margin.left + ((Math.log10(value) - xLow) / (xHigh - xLow)) * plotWidth,
    toY: (value) => margin.top + (1 - (Math.log10(value) - yLow) / (yTop - yLow)) * plotHeight,
    yDecades,
  };
}

function renderAxes(plot: LogLogPlot, scale: Scale): string[] {
  const parts: string[] = [];
  const bottom = height - margin.bottom;
  const right = width - margin.right;
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${right - margin.left}" height="${bottom - margin.top}" fill="none" stroke="#444"/>`,
  );
  for (const tick of plot.xTicks) {
    const x = scale.toX(tick).toFixed(1);
    parts.push(`<line x1="${x}" y1="${margin.top}" x2="${x}" y2="${bottom}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x}" y="${bottom + 18}" text-anchor="middle">${format(tick)}</text>`);
  }
  for (const decade of scale.yDecades) {
    const y = scale.toY(10 ** decade).toFixed(1);
    parts.push(`<line x1="${margin.left}" y1="${y}" x2="${right}" y2="${y}" stroke="#e4e4e4"/>`);
    parts.push(
      `<text x="${margin.left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">1e${decade}</text>`,
    );
  }
  parts.push(
    `<text x="${(margin.left + right) / 2}" y="${height - 16}" text-anchor="middle">${escapeXml(plot.xLabel)}</text>`,
  );
  parts.push(
    `<text transform="translate(20 ${(margin.top + bottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(plot.yLabel)}</text>`,
  );
  parts.push(`<text x="${margin.left}" y="28" font-weight="bold">${escapeXml(plot.title)}</text>`);
  return parts;
}

function renderSeries(
  series: PlotSeries,
  scale: Scale,
  xRange: readonly [number, number],
): string[] {
  const parts: string[] = [];
  const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
  if (series.fit) {
    const [first, last] = xRange;
    const yAt = (x: number) => Math.exp(series.fit!.intercept + series.fit!.slope * Math.log(x));
    parts.push(
      `<line x1="${scale.toX(first).toFixed(1)}" y1="${scale.toY(yAt(first)).toFixed(1)}" ` +
        `x2="${scale.toX(last).toFixed(1)}" y2="${scale.toY(yAt(last)).toFixed(1)}" ` +
        `stroke="${series.color}" stroke-width="1.5"${dash}/>`,
    );
  }
  for (const point of series.points) {
    if (!(point.y > 0)) continue;
    const x = scale.toX(point.x).toFixed(1);
    if (point.low !== undefined && point.high !== undefined && point.low > 0 && point.high > 0) {
      parts.push(
        `<line x1="${x}" y1="${scale.toY(point.low).toFixed(1)}" x2="${x}" y2="${scale.toY(point.high).toFixed(1)}" stroke="${series.color}"/>`,
      );
    }
    parts.push(
      `<circle cx="${x}" cy="${scale.toY(point.y).toFixed(1)}" r="3.5" fill="${series.color}"/>`,
    );
  }
  return parts;
}

function renderLegend(plot: LogLogPlot): string[] {
  const parts: string[] = [];
  const left = width - margin.right + 16;
  plot.series.forEach((series, index) => {
    const y = margin.top + 10 + index * 22;
    const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
    parts.push(
      `<line x1="${left}" y1="${y}" x2="${left + 24}" y2="${y}" stroke="${series.color}" stroke-width="2"${dash}/>`,
    );
    parts.push(
      `<text x="${left + 30}" y="${y}" dominant-baseline="middle">${escapeXml(series.label)}</text>`,
    );
  });
  return parts;
}

export function renderLogLogPlot(plot: LogLogPlot): string {
  const scale = buildScale(plot);
  const xs = plot.xTicks.length
    ? plot.xTicks
    : plot.series.flatMap((series) => series.points.map((point) => point.x));
  const xRange: [number, number] = [Math.min(...xs), Math.max(...xs)];
  const body = [
    ...renderAxes(plot, scale),
    ...plot.series.flatMap((series) => renderSeries(series, scale, xRange)),
    ...renderLegend(plot),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...body.map((line) => `  ${line}`),
    '</svg>',
    '',
  ].join('\n');
}
