import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findWorkload } from './registry.js';
import type { BenchmarkResult } from './workloads.js';

export interface ChildWorkloadOptions {
  repeats: number;
  warmup: number;
  /** Kernel backend of the child. @default 'auto' */
  backend?: string;
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
 * Runs a registered workload in a fresh Node process (run-workload.ts) and returns its figures
 * and its peak RSS: one workload's memory never hides another's, and none inherits another's
 * heap. From the TypeScript sources (tests) the child runs them through tsx too.
 */
export function runWorkloadInChild(name: string, options: ChildWorkloadOptions): BenchmarkResult[] {
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
    ],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  if (run.error) throw run.error;
  if (run.status !== 0)
    throw new Error(
      `benchmark workload ${name} failed (exit ${run.status ?? run.signal}):\n${run.stderr}`,
    );
  return run.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => parseResultLine(line, name));
}
