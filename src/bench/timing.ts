/**
 * Timing for `teamtr bench`: median wall time of repeated runs after warm-up, and sgemm's rate.
 * Median rather than mean or best, because the machines we run on are shared and a single
 * descheduled run should neither inflate nor flatter the figure.
 */
import { performance } from 'node:perf_hooks';
import type { KernelBackend } from '../backend/types.js';

export interface TimingOptions {
  /** Keep timing until this much time has been spent (after warm-up). @default 1 */
  minimumSeconds?: number;
  /** Untimed runs first (caches, thread start-up, lazily built tables). @default 2 */
  warmupRuns?: number;
  /** @default 5 */
  minimumRuns?: number;
  /** @default 10000 */
  maximumRuns?: number;
}

export interface Timing {
  medianSeconds: number;
  runs: number;
}

/** Times `run` repeatedly and returns the median. */
export function timeKernel(run: () => void, options: TimingOptions = {}): Timing {
  const { minimumSeconds = 1, warmupRuns = 2, minimumRuns = 5, maximumRuns = 10000 } = options;
  for (let i = 0; i < warmupRuns; i++) run();
  const durations: number[] = [];
  const start = performance.now();
  while (
    durations.length < minimumRuns ||
    (durations.length < maximumRuns && performance.now() - start < minimumSeconds * 1000)
  ) {
    const before = performance.now();
    run();
    durations.push((performance.now() - before) / 1000);
  }
  durations.sort((x, y) => x - y);
  return { medianSeconds: durations[Math.floor(durations.length / 2)], runs: durations.length };
}

export interface SgemmBenchmarkOptions {
  m: number;
  n: number;
  k: number;
  /** @default 1 */
  minimumSeconds?: number;
  /** @default false */
  transposeA?: boolean;
  /** @default false */
  transposeB?: boolean;
}

/** Filled with a cheap deterministic pattern in [−0.5, 0.5): benchmark inputs need no RNG. */
function patterned(length: number): Float32Array {
  const values = new Float32Array(length);
  for (let i = 0; i < length; i++) values[i] = ((i * 7919) % 1000) / 1000 - 0.5;
  return values;
}

/** C[m×n] = A[m×k]·B[k×n] in GFLOP/s (2·m·n·k floating-point operations per product). */
export function benchmarkSgemm(backend: KernelBackend, options: SgemmBenchmarkOptions): number {
  const { m, n, k, minimumSeconds = 1, transposeA = false, transposeB = false } = options;
  const a = patterned(m * k);
  const b = patterned(k * n);
  const c = new Float32Array(m * n);
  const timing = timeKernel(
    () =>
      backend.matmul({
        a,
        b,
        c,
        batch: 1,
        m,
        n,
        k,
        transposeA,
        transposeB,
        strideA: 0,
        strideB: 0,
      }),
    { minimumSeconds, minimumRuns: 3 },
  );
  return (2 * m * n * k) / timing.medianSeconds / 1e9;
}
