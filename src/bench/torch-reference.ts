import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeBuildInfo } from '../backend/native.js';
import { parseResultLine } from './child-process.js';
import type { BenchmarkResult } from './context.js';

/**
 * PyTorch as the reference of `teamtr bench`: Debian's python3-torch, run on the scripts in
 * pytorch/ beside this file. Debian's PyTorch does its float32 products in the system BLAS,
 * OpenBLAS 0.3.21, whose run-time detection falls back to its oldest kernels on CPUs newer
 * than the release (a Xeon of cpuid model 207 is taken for a Pentium 4, "Prescott": 9 against
 * 69 GFLOP/s for sgemm-4096 at two threads, measured in one run). PyTorch is therefore run
 * with OPENBLAS_CORETYPE set to the core type our own loading of OpenBLAS chose from cpuid
 * (native/src/blas.c) — its fast configuration on this host — unless the caller set it.
 */
export const pythonWithTorch = '/usr/bin/python3';

/** A script in src/bench/pytorch (dist/bench/… resolves to the package's src/bench/pytorch). */
export function torchScript(name: string): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.resolve(here, '..', '..', 'src', 'bench', 'pytorch', name);
}

/** Whether Debian's python3-torch is there to run the reference scripts. */
export function hasTorch(): boolean {
  if (!existsSync(pythonWithTorch)) return false;
  return spawnSync(pythonWithTorch, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
}

/**
 * The environment PyTorch runs in: OpenBLAS's pool sized for `threads`, a passive OpenMP wait
 * policy (idle PyTorch threads do not spin against OpenBLAS's), and the host's core type.
 */
export function torchEnvironment(threads: number): NodeJS.ProcessEnv {
  const core = nativeBuildInfo()?.blasCore;
  return {
    ...process.env,
    OPENBLAS_NUM_THREADS: String(threads),
    OMP_WAIT_POLICY: 'PASSIVE',
    ...(core && !process.env.OPENBLAS_CORETYPE ? { OPENBLAS_CORETYPE: core } : {}),
  };
}

/** One run of a reference script's result lines, each parsed. */
function runScript(script: string, args: string[], threads: number): BenchmarkResult[] {
  const run = spawnSync(pythonWithTorch, [torchScript(script), ...args], {
    encoding: 'utf8',
    env: torchEnvironment(threads),
  });
  if (run.status !== 0)
    throw new Error(`the PyTorch reference (${script} ${args.join(' ')}) failed:\n${run.stderr}`);
  return run.stdout
    .trim()
    .split('\n')
    .map((line) => parseResultLine(line, `${script} (PyTorch)`));
}

/** Each figure at its best over PyTorch's 1 and 2 threads. */
function bestOfThreads(script: string, args: string[]): Map<string, BenchmarkResult> {
  const best = new Map<string, BenchmarkResult>();
  for (const threads of [1, 2])
    for (const result of runScript(script, [...args, '--threads', String(threads)], 2)) {
      const previous = best.get(result.name);
      if (!previous || result.value > previous.value) best.set(result.name, result);
    }
  return best;
}

/** PyTorch's llama-3m figures (torch_reference.py), each at its best thread setting. */
export function torchTinyReference(repeats: number): Map<string, BenchmarkResult> {
  return bestOfThreads('torch_reference.py', ['--repeats', String(repeats)]);
}

/** PyTorch's sgemm 4096×1024×1024 in GFLOP/s, at its best thread setting. */
export function torchSgemm(repeats = 5): number {
  const best = bestOfThreads('torch_reference.py', ['--sgemm-only', '--repeats', String(repeats)]);
  return best.get('sgemm-4096x1024x1024')!.value;
}
