import type { Axis } from './axes.js';
import type { Figure, FigurePoint, FigureSeries } from './figure.js';
import { bandOpacity, idFragment, px } from './markup.js';

/** The plot frame, in pixels. */
export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Axes placed in a frame: data value → pixel. */
export interface PlacedAxes {
  x: Axis;
  y: Axis;
  toX: (value: number) => number;
  toY: (value: number) => number;
}

export function placeAxes(x: Axis, y: Axis, plot: Box): PlacedAxes {
  const toX = (value: number) =>
    plot.left + ((x.transform(value) - x.min) / (x.max - x.min)) * plot.width;
  const toY = (value: number) =>
    plot.top + plot.height - ((y.transform(value) - y.min) / (y.max - y.min)) * plot.height;
  return { x, y, toX, toY };
}

/** Points that can be drawn: finite, and positive on a log axis. */
function drawable(points: readonly FigurePoint[], axes: PlacedAxes): FigurePoint[] {
  return points.filter(
    (point) =>
      Number.isFinite(point.x) &&
      Number.isFinite(point.y) &&
      Number.isFinite(axes.toX(point.x)) &&
      Number.isFinite(axes.toY(point.y)),
  );
}

/**
 * The series' interval as one shaded polygon: along the highs, back along the lows. Points
 * without a drawable interval split the band.
 */
function drawBand(series: FigureSeries, axes: PlacedAxes): string[] {
  const runs: FigurePoint[][] = [[]];
  for (const point of drawable(series.points, axes)) {
    const inside =
      Number.isFinite(axes.toY(point.low ?? Number.NaN)) &&
      Number.isFinite(axes.toY(point.high ?? Number.NaN));
    if (inside) runs.at(-1)!.push(point);
    else if (runs.at(-1)!.length > 0) runs.push([]);
  }
  return runs
    .filter((run) => run.length > 1)
    .map((run) => {
      const upper = run.map((point) => `${px(axes.toX(point.x))},${px(axes.toY(point.high!))}`);
      const lower = run
        .map((point) => `${px(axes.toX(point.x))},${px(axes.toY(point.low!))}`)
        .reverse();
      return `<path d="M${[...upper, ...lower].join('L')}Z" fill="${series.color}" fill-opacity="${bandOpacity}" stroke="none"/>`;
    });
}

/** Bars of one series, side by side with the other bar series inside each category's slot. */
function drawBars(series: FigureSeries, index: number, count: number, axes: PlacedAxes): string[] {
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

function drawLineAndMarkers(series: FigureSeries, axes: PlacedAxes): string[] {
  const parts: string[] = [];
  const points = drawable(series.points, axes);
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
  return parts;
}

/** Every series inside the plot frame: bands underneath, then bars, then lines and markers. */
export function drawSeries(figure: Figure, axes: PlacedAxes, plot: Box): string[] {
  const clipId = `clip-${idFragment(figure.id)}`;
  const parts = [
    `<clipPath id="${clipId}"><rect x="${px(plot.left)}" y="${px(plot.top)}" width="${px(plot.width)}" height="${px(plot.height)}"/></clipPath>`,
    `<g clip-path="url(#${clipId})">`,
  ];
  for (const series of figure.series) parts.push(...drawBand(series, axes));
  const barSeries = figure.series.filter((series) => series.style === 'bars');
  barSeries.forEach((series, index) =>
    parts.push(...drawBars(series, index, barSeries.length, axes)),
  );
  for (const series of figure.series) parts.push(...drawLineAndMarkers(series, axes));
  parts.push('</g>');
  return parts;
}
