import type { EvaluationRecord, StageRecord, UpdateRecord } from '../trainer/records.js';
import type { FigurePoint, FigureSeries } from '../figures/figure.js';
import { paletteColor, shade } from '../figures/palette.js';
import { runSchedule, type RunView } from './runs.js';

/** What every figure builder needs: a run's records by type, points from them, run colors. */

/** One hue per schedule; the runs of a schedule (its seeds) get lighter shades of it. */
export function runColors(runs: readonly RunView[]): Map<string, string> {
  const schedules: string[] = [];
  const seen = new Map<string, number>();
  const colors = new Map<string, string>();
  for (const run of runs) {
    const schedule = runSchedule(run);
    if (!schedules.includes(schedule)) schedules.push(schedule);
    const within = seen.get(schedule) ?? 0;
    seen.set(schedule, within + 1);
    colors.set(
      run.id,
      shade(paletteColor(schedules.indexOf(schedule)), Math.min(0.6, within * 0.28)),
    );
  }
  return colors;
}

export function updatesOf(run: RunView): UpdateRecord[] {
  return run.records.filter((record): record is UpdateRecord => record.type === 'update');
}

export function stagesOf(run: RunView): StageRecord[] {
  return run.records.filter((record): record is StageRecord => record.type === 'stage');
}

export function evaluationsOf(run: RunView): EvaluationRecord[] {
  return run.records.filter((record): record is EvaluationRecord => record.type === 'eval');
}

export function finite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

export function pointsOf<T>(
  items: readonly T[],
  x: (item: T) => unknown,
  y: (item: T) => unknown,
): FigurePoint[] {
  return items.flatMap((item) => {
    const xValue = x(item);
    const yValue = y(item);
    return finite(xValue) && finite(yValue) ? [{ x: xValue, y: yValue }] : [];
  });
}

/** Drops series without points: a figure whose list ends empty has no data yet. */
export function withData(series: FigureSeries[]): FigureSeries[] {
  return series.filter((entry) => entry.points.length > 0);
}

export function colorOf(colors: Map<string, string>, run: RunView): string {
  return colors.get(run.id) ?? paletteColor(0);
}

/** Largest and smallest of many values (Math.max(...values) fails past ~100k arguments); null if none. */
export function maximum(values: readonly number[]): number | null {
  return values.length ? values.reduce((a, b) => (b > a ? b : a)) : null;
}

export function minimum(values: readonly number[]): number | null {
  return values.length ? values.reduce((a, b) => (b < a ? b : a)) : null;
}
