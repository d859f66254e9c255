/**
 * The report's figures (figures/figure.ts) as uPlot options and data: the same numbers the
 * report draws as SVG, drawn in the browser so they can update while a run is written.
 */
import type { Figure, FigureSeries } from './api.js';
import { number, safeColor, tickLabels } from './format.js';

type Row = (number | null)[];

/** uPlot wants one shared x array and one y array per series (null where a series has no point). */
export function alignedData(figure: Figure): uPlot.AlignedData {
  let xs: number[] = [];
  if (figure.xCategories) {
    xs = figure.xCategories.map((_label, index) => index);
  } else {
    const seen = new Set<number>();
    for (const series of figure.series) {
      for (const point of series.points) {
        if (!seen.has(point.x)) {
          seen.add(point.x);
          xs.push(point.x);
        }
      }
    }
    xs.sort((a, b) => a - b);
  }
  const index = new Map(xs.map((x, position) => [x, position]));
  const rows: Row[] = figure.series.map((series) => {
    const ys: Row = xs.map(() => null);
    for (const point of series.points) ys[index.get(point.x)!] = point.y;
    return ys;
  });
  return [xs, ...rows] as uPlot.AlignedData;
}

function yRange(figure: Figure): uPlot.Range.Function {
  const hasBars = figure.series.some((series) => series.style === 'bars');
  return (_chart, min, max) => {
    let low = min;
    let high = max;
    if (figure.yMin !== undefined) low = Math.min(low, figure.yMin);
    if (figure.yMax !== undefined) high = Math.max(high, figure.yMax);
    if (hasBars) {
      low = Math.min(low, 0);
      high = Math.max(high, 0);
    }
    if (!isFinite(low) || !isFinite(high)) {
      low = 0;
      high = 1;
    }
    if (low === high) {
      const pad = low === 0 ? 1 : Math.abs(low) * 0.1;
      return [low - (figure.yMin === low ? 0 : pad), high + pad];
    }
    const margin = 0.06 * (high - low);
    return [figure.yMin === low ? low : low - margin, high + margin];
  };
}

function xRange(figure: Figure): uPlot.Range.Function {
  const categories = figure.xCategories;
  if (categories) return () => [-0.5, categories.length - 0.5];
  return (_chart, min, max) => {
    if (min === max) {
      const pad = figure.xIntegers || min === 0 ? 1 : Math.abs(min) * 0.1;
      return [min - pad, max + pad];
    }
    const margin = 0.02 * (max - min);
    return [min - margin, max + margin];
  };
}

function seriesOptions(series: FigureSeries, barIndex: number, barCount: number): uPlot.Series {
  const color = safeColor(series.color);
  if (series.style === 'bars') {
    const width = 0.8 / barCount;
    return {
      label: series.label,
      stroke: color,
      fill: color,
      width: 0,
      points: { show: false },
      paths: uPlot.paths.bars!({
        disp: {
          x0: {
            unit: 1,
            values: (chart) => (chart.data[0] as number[]).map((x) => x - 0.4 + barIndex * width),
          },
          size: { unit: 1, values: () => [width * 0.92] },
        },
      }),
    };
  }
  if (series.style === 'points') {
    return {
      label: series.label,
      stroke: color,
      fill: color,
      paths: () => null,
      points: { show: true, size: 7, width: 1, stroke: '#ffffff', fill: color },
    };
  }
  return {
    label: series.label,
    stroke: color,
    width: 2,
    spanGaps: true,
    dash: series.dashed ? [6, 4] : undefined,
    points: { show: Boolean(series.markers) || series.points.length === 1, size: 6, fill: color },
  };
}

const axisFont = '11px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';
const labelFont = '500 12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';

function xAxisOf(figure: Figure): uPlot.Axis {
  const axis: uPlot.Axis = {
    label: figure.xLabel,
    stroke: '#6b7280',
    font: axisFont,
    labelFont,
    grid: { stroke: '#eef0f3' },
    ticks: { stroke: '#d1d5db' },
  };
  const categories = figure.xCategories;
  if (categories) {
    axis.splits = () => categories.map((_label, index) => index);
    axis.values = (_chart, splits) => splits.map((value) => categories[value] ?? '');
    axis.grid = { show: false };
  } else {
    axis.values = (_chart, splits) => tickLabels(splits);
    if (figure.xIntegers) axis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
  }
  return axis;
}

export function chartOptions(figure: Figure, width: number): uPlot.Options {
  const barCount = figure.series.filter((series) => series.style === 'bars').length;
  let barIndex = 0;
  const categories = figure.xCategories;
  const series: uPlot.Series[] = [
    {
      label: figure.xLabel,
      value: (_chart, value) =>
        value === null ? '' : categories ? (categories[value] ?? '') : number(value),
    },
  ];
  for (const entry of figure.series) {
    const options = seriesOptions(entry, barIndex, barCount);
    if (entry.style === 'bars') barIndex++;
    options.value = (_chart, value) =>
      value === null || value === undefined ? '—' : number(value);
    series.push(options);
  }
  return {
    width,
    height: 300,
    series,
    scales: { x: { time: false, range: xRange(figure) }, y: { range: yRange(figure) } },
    axes: [
      xAxisOf(figure),
      {
        label: figure.yLabel,
        stroke: '#6b7280',
        font: axisFont,
        labelFont,
        size: 64,
        grid: { stroke: '#eef0f3' },
        ticks: { stroke: '#d1d5db' },
        values: (_chart, splits) => tickLabels(splits),
      },
    ],
    legend: { live: false },
    cursor: { drag: { x: true, y: false } },
  };
}

/** What forces a new chart rather than new data: the series and the categories. */
export function signatureOf(figure: Figure): string {
  return JSON.stringify([
    figure.series.map((series) => [series.label, series.style, series.color]),
    figure.xCategories ?? null,
  ]);
}
