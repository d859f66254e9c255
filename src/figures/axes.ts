import type { Figure } from './figure.js';
import { formatTicks, niceScale, type NiceScale } from './ticks.js';

/**
 * The axes of a chart, fitted to its data: linear (nice bounds and steps), logarithmic (decades,
 * or 1-2-5 steps when the data span less than a few decades) or categorical. Drawing happens in
 * "axis units" — the value itself, or its log10 on a log axis — so a power law is a straight line.
 */

/** One axis ready to draw. */
export interface Axis {
  /** Bounds in axis units. */
  min: number;
  max: number;
  /** Tick values (data units) and their labels. */
  ticks: number[];
  labels: string[];
  /** Data value → axis units; non-finite where the value cannot be drawn (≤ 0 on a log axis). */
  transform: (value: number) => number;
}

const identity = (value: number) => value;
const log10 = (value: number) => (value > 0 ? Math.log10(value) : Number.NaN);

function fromNice(scale: NiceScale): Axis {
  return {
    min: scale.min,
    max: scale.max,
    ticks: scale.ticks,
    labels: formatTicks(scale.ticks, scale.step),
    transform: identity,
  };
}

/** Every value the figure draws on each axis, intervals included. */
function valuesOf(figure: Figure): { xs: number[]; ys: number[] } {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const series of figure.series) {
    for (const point of series.points) {
      if (!Number.isFinite(point.x) || !Number.isFinite(point.y)) continue;
      xs.push(point.x);
      ys.push(point.y);
      if (Number.isFinite(point.low)) ys.push(point.low!);
      if (Number.isFinite(point.high)) ys.push(point.high!);
    }
  }
  return { xs, ys };
}

// Loops, not Math.min(...values): a long run has more points than a call takes arguments.
function extent(values: readonly number[], start: [number, number]): [number, number] {
  let [low, high] = start;
  for (const value of values) {
    low = Math.min(low, value);
    high = Math.max(high, value);
  }
  return [low, high];
}

/** A short label for a tick value that is not a multiple of a step (log and explicit ticks). */
export function tickLabel(value: number): string {
  const magnitude = Math.abs(value);
  const text =
    value === 0 || (magnitude >= 1e-3 && magnitude < 1e5)
      ? String(Number(value.toPrecision(6)))
      : value.toExponential().replace('e+', 'e');
  return text.replace(/-/g, '\u2212');
}

/** Decades inside [low, high] (log10 units); 1-2-5 or every digit when too few decades fit. */
function logTicks(low: number, high: number): number[] {
  const candidates = (multipliers: readonly number[]) => {
    const ticks: number[] = [];
    for (let decade = Math.floor(low); decade <= Math.ceil(high); decade++) {
      for (const multiplier of multipliers) {
        const tick = Number((multiplier * 10 ** decade).toPrecision(12));
        const position = Math.log10(tick);
        if (position >= low - 1e-9 && position <= high + 1e-9) ticks.push(tick);
      }
    }
    return ticks;
  };
  const decades = candidates([1]);
  if (decades.length >= 3) return decades;
  const steps = candidates([1, 2, 5]);
  return steps.length >= 3 ? steps : candidates([1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

/** A log axis over positive values, padded by 4% of its span (half a decade for one value). */
function logAxis(values: readonly number[], ticks: readonly number[] | undefined): Axis {
  const positive = values.filter((value) => value > 0);
  const [low, high] = extent(positive.map(Math.log10), [Infinity, -Infinity]);
  const [from, to] = Number.isFinite(low) ? [low, high] : [0, 1];
  const pad = to > from ? 0.04 * (to - from) : 0.5;
  const min = from - pad;
  const max = to + pad;
  const chosen = ticks
    ? ticks.filter((tick) => tick > 0 && Math.log10(tick) >= min && Math.log10(tick) <= max)
    : logTicks(min, max);
  return { min, max, ticks: [...chosen], labels: chosen.map(tickLabel), transform: log10 };
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

function xAxisFor(figure: Figure, xs: readonly number[]): Axis {
  if (figure.xCategories) {
    const count = Math.max(1, figure.xCategories.length);
    const ticks = figure.xCategories.map((_label, index) => index);
    return {
      min: -0.5,
      max: count - 0.5,
      ticks,
      labels: ticks.map((tick) => figure.xCategories![tick] ?? ''),
      transform: identity,
    };
  }
  if (figure.xScale === 'log') return logAxis([...xs, ...(figure.xTicks ?? [])], figure.xTicks);
  const [low, high] = extent(xs, [Infinity, -Infinity]);
  const axis = fromNice(padded(linearXScale(low, high, figure.xIntegers ?? false)));
  if (!figure.xTicks) return axis;
  const ticks = figure.xTicks.filter((tick) => tick >= axis.min && tick <= axis.max);
  return { ...axis, ticks, labels: ticks.map(tickLabel) };
}

function yAxisFor(figure: Figure, ys: readonly number[]): Axis {
  if (figure.yScale === 'log') return logAxis(ys, undefined);
  const hasBars = figure.series.some((series) => series.style === 'bars');
  const [low, high] = extent(ys, [
    Math.min(figure.yMin ?? Infinity, hasBars ? 0 : Infinity),
    Math.max(figure.yMax ?? -Infinity, hasBars ? 0 : -Infinity),
  ]);
  return fromNice(niceScale({ min: low, max: high, targetTicks: 5 }));
}

/** Both axes of a figure that has data (figureHasData). */
export function axesFor(figure: Figure): { x: Axis; y: Axis } {
  const { xs, ys } = valuesOf(figure);
  return { x: xAxisFor(figure, xs), y: yAxisFor(figure, ys) };
}
