import { spawnSync } from 'node:child_process';
import { parseResultLine } from './child-process.js';
import { torchEnvironment } from './torch-reference.js';
import type { BenchmarkResult } from './workloads.js';

export interface TorchRealModelOptions {
  /** A Python with PyTorch (Debian's /usr/bin/python3 with python3-torch). */
  python: string;
  /** pytorch/torch_real_model.py */
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
 * PyTorch's figures for the real-model workloads that pytorch/torch_real_model.py implements
 * (its --list; a workload it lacks has no reference), one process per workload as for ours, so
 * each peak RSS is that workload's own. Every figure is kept at its best thread setting.
 * OPENBLAS_NUM_THREADS sizes OpenBLAS's pool for the largest setting; the script lowers it per
 * setting (torchEnvironment: also the passive OpenMP wait and the host's OpenBLAS core type).
 */
export class TorchRealModelReference {
  private readonly available: ReadonlySet<string>;
  private readonly env: NodeJS.ProcessEnv;

  constructor(private readonly options: TorchRealModelOptions) {
    this.env = torchEnvironment(Math.max(...options.threads));
    this.available = new Set(this.python(['--list']).trim().split('\n'));
  }

  /** PyTorch's figures of one workload, each at its best thread setting; none if it lacks it. */
  run(workload: string): BenchmarkResult[] {
    if (!this.available.has(workload)) return [];
    const output = this.python([
      ...['--workload', workload, '--threads', this.options.threads.join(',')],
      ...['--repeats', String(this.options.repeats)],
    ]);
    const best = new Map<string, BenchmarkResult>();
    for (const line of output.trim().split('\n')) {
      const result = parseResultLine(line, `${workload} (PyTorch)`);
      if (better(result, best.get(result.name))) best.set(result.name, result);
    }
    return [...best.values()];
  }

  private python(args: string[]): string {
    const { python, script } = this.options;
    const run = spawnSync(python, [script, ...args], { encoding: 'utf8', env: this.env });
    if (run.status !== 0)
      throw new Error(
        `the PyTorch real-model reference failed (${args.join(' ')}):\n${run.stderr}`,
      );
    return run.stdout;
  }
}
