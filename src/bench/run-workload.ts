/**
 * One registered benchmark workload in this process, so that the peak resident set it reports is
 * that workload's own (`teamtr bench --real-model` starts one such process per workload):
 *
 *   node dist/bench/run-workload.js <workload> [--json] [--repeats n] [--warmup n]
 *       [--backend auto|native|typescript] [--torch-sgemm-ratio r]
 *
 * prints the workload's figures, each throughput followed by its fraction of the machine's bound
 * (`-of-sgemm4096`); the bound itself, `<workload>-sgemm4096` (bound.ts: the fastest sgemm
 * 4096×1024×1024 here, ours or OpenBLAS's through the addon measured just before and just after
 * the workload, their means, so a fraction compares rates taken under the same load of a shared
 * machine; PyTorch's enters as its ratio to the faster of those two, measured by the parent at
 * the start of the run), with `-own` and `-openblas` beside it; then `<workload>-peak-rss` in
 * MiB (process.resourceUsage().maxRSS, read before the second bound measurement). With --json,
 * a last line {"paths": [...], "splits": [...]}: the code each hot kernel ran during the
 * workload, and the time splits it measured (time-split.ts).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setBackend } from '../backend/index.js';
import { nativeKernelPaths, type KernelPathCount } from '../backend/native.js';
import { TeamtrError } from '../util/errors.js';
import { boundOf, measureOwnAndOpenblas } from './bound.js';
import { formatBenchmarkResult, takeTimeSplits } from './context.js';
import { pathLines } from './host-report.js';
import { splitLines, type TimeSplit } from './time-split.js';
import { withFractionsOfBound } from './flops.js';
import { findWorkload } from './registry.js';
import type { BenchmarkResult } from './workloads.js';

export interface WorkloadRunOptions {
  /** @default 3 */
  repeats?: number;
  /** @default 1 */
  warmup?: number;
  /** PyTorch's sgemm-4096 over the faster of ours and OpenBLAS's, from the parent. */
  torchSgemmRatio?: number;
}

/** This process's peak resident set so far, in MiB, as the figure `<workload>-peak-rss`. */
export function peakResidentSet(workload: string): BenchmarkResult {
  return {
    name: `${workload}-peak-rss`,
    value: process.resourceUsage().maxRSS / 1024,
    unit: 'MiB',
  };
}

function mean(first: number | null, second: number | null): number | null {
  return first === null || second === null ? null : (first + second) / 2;
}

/**
 * Runs the workload registered as `name` here: its figures, the bound and its parts, this
 * process's peak RSS, and the kernel paths the workload took.
 */
export async function runWorkload(
  name: string,
  options: WorkloadRunOptions = {},
): Promise<{
  results: BenchmarkResult[];
  paths: KernelPathCount[];
  splits: Array<{ name: string; split: TimeSplit }>;
}> {
  const workload = findWorkload(name);
  const before = measureOwnAndOpenblas({ rounds: 1 });
  nativeKernelPaths({ reset: true });
  const figures = await workload({ repeats: options.repeats ?? 3, warmup: options.warmup ?? 1 });
  const paths = nativeKernelPaths() ?? [];
  const peak = peakResidentSet(name);
  const after = measureOwnAndOpenblas({ rounds: 1 });
  const own = (before.own + after.own) / 2;
  const openblas = mean(before.openblas, after.openblas);
  const ratio = options.torchSgemmRatio;
  const torch = ratio ? ratio * Math.max(own, openblas ?? 0) : null;
  const bound = boundOf({ own, openblas, torch });
  return {
    results: [
      ...withFractionsOfBound(figures, bound.bound),
      { name: `${name}-sgemm4096`, value: bound.bound, unit: 'GFLOP/s' },
      { name: `${name}-sgemm4096-own`, value: own, unit: 'GFLOP/s' },
      ...(openblas === null
        ? []
        : [{ name: `${name}-sgemm4096-openblas`, value: openblas, unit: 'GFLOP/s' }]),
      peak,
    ],
    paths,
    splits: takeTimeSplits(),
  };
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
        'torch-sgemm-ratio': { type: 'string' },
      },
    });
    if (positionals.length !== 1)
      throw new TeamtrError('usage: run-workload.js <workload> [--json] [--repeats n] ...');
    setBackend((values.backend ?? 'auto') as 'auto');
    const { results, paths, splits } = await runWorkload(positionals[0]!, {
      repeats: positiveNumber(values.repeats, '--repeats'),
      warmup: positiveNumber(values.warmup, '--warmup'),
      torchSgemmRatio: positiveNumber(values['torch-sgemm-ratio'], '--torch-sgemm-ratio'),
    });
    for (const result of results)
      process.stdout.write(
        `${values.json ? JSON.stringify(result) : formatBenchmarkResult(result)}\n`,
      );
    const text = [
      'paths:',
      ...pathLines(paths),
      ...splits.flatMap(({ name, split }) => [`time split of ${name}:`, ...splitLines(split)]),
    ];
    process.stdout.write(
      values.json ? `${JSON.stringify({ paths, splits })}\n` : `${text.join('\n')}\n`,
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
