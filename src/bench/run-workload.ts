/**
 * One registered benchmark workload in this process, so that the peak resident set it reports is
 * that workload's own (`teamtr bench --real-model` starts one such process per workload):
 *
 *   node dist/bench/run-workload.js <workload> [--json] [--repeats n] [--warmup n]
 *       [--backend auto|native|typescript]
 *
 * prints the workload's figures, each throughput followed by its fraction of the machine's bound
 * (`-of-sgemm4096`); the bound itself, `<workload>-sgemm4096`: sgemm 4096×1024×1024 measured here
 * just before and just after the workload (their mean), so a fraction compares two rates taken
 * under the same load of a shared machine; then `<workload>-peak-rss` in MiB
 * (process.resourceUsage().maxRSS, read before the second bound measurement).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchmarkSgemm } from '../backend/benchmark.js';
import { getBackend, setBackend } from '../backend/index.js';
import { TeamtrError } from '../util/errors.js';
import { formatBenchmarkResult } from './context.js';
import { withFractionsOfBound } from './flops.js';
import { findWorkload } from './registry.js';
import type { BenchmarkResult } from './workloads.js';

export interface WorkloadRunOptions {
  /** @default 3 */
  repeats?: number;
  /** @default 1 */
  warmup?: number;
}

/** The machine's bound as our kernels reach it: sgemm 4096×1024×1024 GFLOP/s (median, ½ s). */
function measureBound(): number {
  return benchmarkSgemm(getBackend(), { m: 4096, n: 1024, k: 1024, minimumSeconds: 0.5 });
}

/** This process's peak resident set so far, in MiB, as the figure `<workload>-peak-rss`. */
export function peakResidentSet(workload: string): BenchmarkResult {
  return {
    name: `${workload}-peak-rss`,
    value: process.resourceUsage().maxRSS / 1024,
    unit: 'MiB',
  };
}

/** Runs the workload registered as `name` here; its figures, then this process's peak RSS. */
export async function runWorkload(
  name: string,
  options: WorkloadRunOptions = {},
): Promise<BenchmarkResult[]> {
  const workload = findWorkload(name);
  const before = measureBound();
  const figures = await workload({ repeats: options.repeats ?? 3, warmup: options.warmup ?? 1 });
  const peak = peakResidentSet(name);
  const bound = (before + measureBound()) / 2;
  return [
    ...withFractionsOfBound(figures, bound),
    { name: `${name}-sgemm4096`, value: bound, unit: 'GFLOP/s' },
    peak,
  ];
}

function positiveNumber(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!(value >= 0) || !Number.isFinite(value))
    throw new TeamtrError(`${flag} must be a number ≥ 0, got "${text}"`);
  return value;
}

/** The command line above; returns the exit code (2 for a usage error). */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        repeats: { type: 'string' },
        warmup: { type: 'string' },
        backend: { type: 'string' },
      },
    });
    if (positionals.length !== 1)
      throw new TeamtrError('usage: run-workload.js <workload> [--json] [--repeats n] ...');
    setBackend((values.backend ?? 'auto') as 'auto');
    const results = await runWorkload(positionals[0]!, {
      repeats: positiveNumber(values.repeats, '--repeats'),
      warmup: positiveNumber(values.warmup, '--warmup'),
    });
    for (const result of results)
      process.stdout.write(
        `${values.json ? JSON.stringify(result) : formatBenchmarkResult(result)}\n`,
      );
    return 0;
  } catch (error) {
    if (!(error instanceof TeamtrError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
}

const entry = process.argv[1] ? path.resolve(process.argv[1]) : '';
if (entry === fileURLToPath(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
