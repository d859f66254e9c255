import type { TimeSplit } from './time-split.js';
import { timeKernel } from './timing.js';

/** One benchmark figure: `teamtr bench --json` prints one of these per line. */
export interface BenchmarkResult {
  name: string;
  value: number;
  unit: string;
}

/** What every registered workload is told by the run that starts it. */
export interface WorkloadContext {
  /** Timed runs (the median is reported). */
  repeats: number;
  /** Untimed runs first. */
  warmup: number;
}

/** One measured figure, with the compute rate behind it when it is a throughput. */
export interface WorkloadFigure extends BenchmarkResult {
  /**
   * GFLOP/s the measured work ran at (its FLOPs, flops.ts, over its seconds). The runner
   * reports it next to the figure as a fraction of the machine's bound (`<name>-of-sgemm4096`).
   */
  achievedGflops?: number;
}

/** A benchmark workload: what it measures, as named figures (a stage of training is async). */
export type Workload = (context: WorkloadContext) => WorkloadFigure[] | Promise<WorkloadFigure[]>;

/** The median of some values (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Median seconds of a generation call producing 1 new token (`prefill`: the prompt pass, which
 * samples the first token) and `newTokens` (`total`), the two alternating within each repeat so
 * that a change of load on a shared machine hits both. Warm-up runs are prompt passes only: they
 * reach every kernel a decode step uses at a fraction of a whole call's time.
 */
export function timePrefillAndTotal(
  seconds: (maxNewTokens: number) => number,
  newTokens: number,
  context: WorkloadContext,
): { prefill: number; total: number } {
  for (let index = 0; index < context.warmup; index++) seconds(1);
  const prefillRuns: number[] = [];
  const totalRuns: number[] = [];
  for (let index = 0; index < context.repeats; index++) {
    prefillRuns.push(seconds(1));
    totalRuns.push(seconds(newTokens));
  }
  return { prefill: median(prefillRuns), total: median(totalRuns) };
}

/** Median seconds of `repeats` timed runs after `warmup` untimed ones. */
export function medianSeconds(run: () => void, warmup: number, repeats: number): number {
  return timeKernel(run, {
    warmupRuns: warmup,
    minimumRuns: repeats,
    maximumRuns: repeats,
    minimumSeconds: 0,
  }).medianSeconds;
}

/**
 * One figure as `teamtr bench` prints it without --json: name, value, unit in columns, the name
 * 40 wide as it always was, or 52 for the longer real-model names (so those align together).
 */
export function formatBenchmarkResult(result: BenchmarkResult): string {
  const digits = result.unit === 'x' ? 2 : 1;
  const width = result.name.length <= 40 ? 40 : 52;
  return `${result.name.padEnd(width)} ${result.value.toFixed(digits).padStart(10)} ${result.unit}`;
}

/** Time splits a workload measured (time-split.ts), by the figure they explain. */
const splits: Array<{ name: string; split: TimeSplit }> = [];

/** Keeps a workload's time split for its runner to report (run-workload.ts). */
export function recordTimeSplit(name: string, split: TimeSplit): void {
  splits.push({ name, split });
}

/** The splits recorded since the last call, which forgets them. */
export function takeTimeSplits(): Array<{ name: string; split: TimeSplit }> {
  return splits.splice(0, splits.length);
}
