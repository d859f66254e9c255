import { timeKernel } from '../backend/benchmark.js';

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
