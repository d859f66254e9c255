import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { benchmarkSgemm } from '../../backend/benchmark.js';
import { getBackend, setBackend } from '../../backend/index.js';
import {
  benchmarkGenerate,
  benchmarkScore,
  benchmarkTrainStep,
  type BenchmarkResult,
} from '../../bench/workloads.js';
import { runWorkloadInChild } from '../../bench/child-process.js';
import { formatBenchmarkResult } from '../../bench/context.js';
import { realModelWorkloads } from '../../bench/registry.js';
import { TorchRealModelReference } from '../../bench/torch-real-model.js';
import { packagePath } from '../package-path.js';

const sgemmShapes: Array<[number, number, number]> = [
  [64, 256, 256],
  [512, 256, 1024],
  [2048, 512, 512],
  [4096, 1024, 1024],
];
const pythonWithTorch = '/usr/bin/python3';

function referenceScript(): string {
  return packagePath('bench', 'torch_reference.py');
}

/** Timed runs (median) and untimed runs first of each real-model workload, here and in PyTorch. */
const realModelRepeats = 3;
const realModelWarmup = 1;

/** Whether Debian's python3-torch is there to run the reference scripts. */
function hasTorch(): boolean {
  if (!existsSync(pythonWithTorch)) return false;
  return spawnSync(pythonWithTorch, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
}

/**
 * PyTorch's figures for the same workloads, at its best thread setting (1 and 2 threads with
 * OPENBLAS_NUM_THREADS=2 and a passive OpenMP wait policy, the setting where its threads do
 * not fight OpenBLAS's). Null when Debian's python3-torch is not installed.
 */
function torchReference(repeats: number): Map<string, BenchmarkResult> {
  const best = new Map<string, BenchmarkResult>();
  for (const threads of [1, 2]) {
    const run = spawnSync(
      pythonWithTorch,
      [referenceScript(), '--threads', String(threads), '--repeats', String(repeats)],
      {
        encoding: 'utf8',
        env: { ...process.env, OPENBLAS_NUM_THREADS: '2', OMP_WAIT_POLICY: 'PASSIVE' },
      },
    );
    if (run.status !== 0) throw new Error(`the PyTorch reference failed:\n${run.stderr}`);
    for (const line of run.stdout.trim().split('\n')) {
      const result = JSON.parse(line) as BenchmarkResult;
      const previous = best.get(result.name);
      if (!previous || result.value > previous.value) best.set(result.name, result);
    }
  }
  return best;
}

/**
 * The --real-model workloads, each in a process of its own (its figures go to `emit`), and
 * PyTorch's run of each right after ours, so that on a shared machine both are taken under
 * about the same load. Returns PyTorch's figures (for the ratios printed at the end).
 */
function realModelBench(
  emit: (result: BenchmarkResult) => void,
  backend: string,
  withTorch: boolean,
): BenchmarkResult[] {
  const options = { repeats: realModelRepeats, warmup: realModelWarmup, backend };
  const torch = withTorch
    ? new TorchRealModelReference({
        python: pythonWithTorch,
        script: packagePath('bench', 'torch_real_model.py'),
        repeats: realModelRepeats,
        threads: [1, 2],
      })
    : null;
  const reference: BenchmarkResult[] = [];
  for (const name of Object.keys(realModelWorkloads)) {
    for (const result of runWorkloadInChild(name, options)) emit(result);
    reference.push(...(torch?.run(name) ?? []));
  }
  return reference;
}

interface BenchFlags {
  backend: string;
  repeats: string;
  torch: boolean;
  realModel?: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('bench')
    .description(
      'measure the engine: sgemm GFLOP/s and the llama-3m train/generate/score workloads, with PyTorch ratios when available',
    )
    .option('--backend <name>', 'kernel backend: auto, native or typescript', 'auto')
    .option(
      '--repeats <n>',
      'timed repetitions per llama-3m workload (after 3 warm-ups; the real-model ones take 3 after 1)',
      '10',
    )
    .option('--no-torch', 'skip the PyTorch reference')
    .option(
      '--real-model',
      "also time a random model of SmolLM2-135M's shape, each workload in its own process with its peak RSS: prefill, decode and whole generation at batch 1, 8 and 64, a decode step's products, scoring and the trust region's exact KL (16 × 128 tokens), a LoRA step (4 × 128 tokens), one TeamTR stage of three LoRA agents on a bfloat16 base (4 prompts × 4 trajectories, 64-token turns: seconds, sampling and update seconds, peak RSS); each throughput also as a fraction of sgemm-4096 measured around it at its FLOPs, and the same workloads in PyTorch (bench/torch_real_model.py; the stage has no PyTorch counterpart) for ratios (about 12 minutes on a quiet 2-core machine)",
    )
    .option('--json', 'one JSON object per line: {"name", "value", "unit"}')
    .action((flags: BenchFlags) => {
      setBackend(flags.backend as 'auto');
      const backend = getBackend();
      const repeats = Math.max(3, Number(flags.repeats) || 10);
      const results: BenchmarkResult[] = [];
      const emit = (result: BenchmarkResult): void => {
        results.push(result);
        const line = flags.json ? JSON.stringify(result) : formatBenchmarkResult(result);
        process.stdout.write(`${line}\n`);
      };
      if (!flags.json) process.stdout.write(`backend: ${backend.description}\n`);
      for (const [m, n, k] of sgemmShapes)
        emit({
          name: `sgemm-${m}x${n}x${k}`,
          value: benchmarkSgemm(backend, { m, n, k, minimumSeconds: 1 }),
          unit: 'GFLOP/s',
        });
      emit(benchmarkTrainStep({ repeats, warmup: 3 }));
      // Steady-state sampling, as in a training loop that generates thousands of batches: the
      // same 3 warm-ups and repeats as the other workloads, here and in the PyTorch script.
      emit(benchmarkGenerate({ repeats, warmup: 3 }));
      emit(benchmarkScore({ repeats, warmup: 3 }));
      const withTorch = flags.torch && hasTorch();
      const realModelReference = flags.realModel
        ? realModelBench(emit, flags.backend, withTorch)
        : [];
      const reference = withTorch ? torchReference(repeats) : null;
      for (const result of realModelReference) reference?.set(result.name, result);
      if (!reference) {
        if (!flags.json)
          process.stdout.write(
            "(no PyTorch reference: install Debian's python3-torch for ratios)\n",
          );
        return;
      }
      for (const ours of [...results]) {
        const theirs = reference.get(ours.name);
        if (!theirs) continue;
        emit({ name: `torch-${ours.name}`, value: theirs.value, unit: theirs.unit });
        emit({ name: `ratio-${ours.name}`, value: ours.value / theirs.value, unit: 'x' });
      }
    });
}
