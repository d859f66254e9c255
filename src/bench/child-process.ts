import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KernelPathCount } from '../backend/native.js';
import type { TimeSplit } from './time-split.js';
import { findWorkload } from './registry.js';
import type { BenchmarkResult } from './workloads.js';

export interface ChildWorkloadOptions {
  repeats: number;
  warmup: number;
  /** Kernel backend of the child. @default 'auto' */
  backend?: string;
  /** PyTorch's sgemm-4096 over the faster of ours and OpenBLAS's (bound.ts). */
  torchSgemmRatio?: number;
}

/** What a workload's process reports: its figures, the kernel paths it took, its time splits. */
export interface ChildWorkloadReport {
  results: BenchmarkResult[];
  paths: KernelPathCount[];
  splits: Array<{ name: string; split: TimeSplit }>;
}

/** Checks one line of a child's --json output: {"name": string, "value": number, "unit": string}. */
export function parseResultLine(line: string, workload: string): BenchmarkResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    value = null;
  }
  const result = value as Partial<BenchmarkResult> | null;
  if (
    !result ||
    typeof result.name !== 'string' ||
    typeof result.value !== 'number' ||
    typeof result.unit !== 'string'
  )
    throw new Error(`benchmark workload ${workload} printed a line that is not a result: ${line}`);
  return { name: result.name, value: result.value, unit: result.unit };
}

/**
 * Runs a registered workload in a fresh Node process (run-workload.ts) and returns its figures,
 * its peak RSS and the kernel paths it took: one workload's memory never hides another's, and none inherits another's
 * heap. From the TypeScript sources (tests) the child runs them through tsx too.
 */
export function runWorkloadInChild(
  name: string,
  options: ChildWorkloadOptions,
): ChildWorkloadReport {
  findWorkload(name); // an unknown name fails here, with the list, before a process starts
  const here = fileURLToPath(import.meta.url);
  const fromSources = here.endsWith('.ts');
  const runner = path.join(path.dirname(here), `run-workload.${fromSources ? 'ts' : 'js'}`);
  const run = spawnSync(
    process.execPath,
    [
      ...(fromSources ? ['--import', 'tsx'] : []),
      runner,
      name,
      '--json',
      ...['--repeats', String(options.repeats), '--warmup', String(options.warmup)],
      ...['--backend', options.backend ?? 'auto'],
      ...(options.torchSgemmRatio ? ['--torch-sgemm-ratio', String(options.torchSgemmRatio)] : []),
    ],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  if (run.error) throw run.error;
  if (run.status !== 0)
    throw new Error(
      `benchmark workload ${name} failed (exit ${run.status ?? run.signal}):\n${run.stderr}`,
    );
  const lines = run.stdout.split('\n').filter((line) => line.trim() !== '');
  const last = lines.at(-1) ?? '';
  const details = last.startsWith('{"paths":')
    ? (JSON.parse(last) as Pick<ChildWorkloadReport, 'paths' | 'splits'>)
    : null;
  if (!details) throw new Error(`benchmark workload ${name} did not report its kernel paths`);
  return { results: lines.slice(0, -1).map((line) => parseResultLine(line, name)), ...details };
}
