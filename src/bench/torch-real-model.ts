import { spawnSync } from 'node:child_process';
import { parseResultLine } from './child-process.js';
import type { BenchmarkResult } from './workloads.js';

export interface TorchRealModelOptions {
  /** A Python with PyTorch (Debian's /usr/bin/python3 with python3-torch). */
  python: string;
  /** bench/torch_real_model.py */
  script: string;
  repeats: number;
  /** Thread counts to try, PyTorch's and OpenBLAS's alike; each figure keeps its best. */
  threads: readonly number[];
}

/** Better of two figures of one name: less memory, otherwise more throughput. */
function better(candidate: BenchmarkResult, previous: BenchmarkResult | undefined): boolean {
  if (!previous) return true;
  return candidate.unit === 'MiB'
    ? candidate.value < previous.value
    : candidate.value > previous.value;
}

/**
 * PyTorch's figures for the real-model workloads it implements (bench/torch_real_model.py
 * --list; a workload it lacks has no reference), one process per workload as for ours, so
 * each peak RSS is that workload's own. Every figure is kept at its best thread setting.
 * OPENBLAS_NUM_THREADS sizes OpenBLAS's pool for the largest setting; the script lowers it per
 * setting. A passive OpenMP wait policy keeps idle PyTorch threads from spinning against
 * OpenBLAS's.
 */
export function torchRealModelReference(
  workloads: readonly string[],
  options: TorchRealModelOptions,
): Map<string, BenchmarkResult> {
  const env = {
    ...process.env,
    OPENBLAS_NUM_THREADS: String(Math.max(...options.threads)),
    OMP_WAIT_POLICY: 'PASSIVE',
  };
  const python = (args: string[]): string => {
    const run = spawnSync(options.python, [options.script, ...args], { encoding: 'utf8', env });
    if (run.status !== 0)
      throw new Error(
        `the PyTorch real-model reference failed (${args.join(' ')}):\n${run.stderr}`,
      );
    return run.stdout;
  };
  const available = new Set(python(['--list']).trim().split('\n'));
  const best = new Map<string, BenchmarkResult>();
  for (const workload of workloads.filter((name) => available.has(name))) {
    const output = python([
      ...['--workload', workload, '--threads', options.threads.join(',')],
      ...['--repeats', String(options.repeats)],
    ]);
    for (const line of output.trim().split('\n')) {
      const result = parseResultLine(line, `${workload} (PyTorch)`);
      if (better(result, best.get(result.name))) best.set(result.name, result);
    }
  }
  return best;
}
