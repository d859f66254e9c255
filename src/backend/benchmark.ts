/**
 * Kernel micro-benchmarks for `teamtr bench`: median wall time of repeated runs after warm-up.
 * Median rather than mean or best, because the machines we run on are shared and a single
 * descheduled run should neither inflate nor flatter the figure.
 */
import { performance } from 'node:perf_hooks';
import type { KernelBackend } from './types.js';

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

export interface KernelTiming {
  name: string;
  milliseconds: number;
  runs: number;
}

/**
 * The kernels that dominate a small llama training step besides matmul, at the sizes of the
 * reference configuration (batch 16 × 128 tokens, d_model 256, 4 heads of 64, SwiGLU 704,
 * vocab 128, ~3M parameters).
 */
export function benchmarkHotKernels(backend: KernelBackend, minimumSeconds = 0.5): KernelTiming[] {
  const cases = hotKernelCases(backend);
  return cases.map(({ name, run }) => {
    const timing = timeKernel(run, { minimumSeconds, minimumRuns: 3 });
    return { name, milliseconds: timing.medianSeconds * 1000, runs: timing.runs };
  });
}

function hotKernelCases(backend: KernelBackend): { name: string; run: () => void }[] {
  const [batch, length, heads, headDim] = [16, 128, 4, 64];
  const shape = {
    batch,
    queryLength: length,
    keyLength: length,
    keyCapacity: length,
    heads,
    kvHeads: heads,
    headDim,
    queryStart: 0,
    scale: 1 / Math.sqrt(headDim),
    keyMask: null,
  };
  const query = patterned(batch * length * heads * headDim);
  const key = patterned(query.length);
  const value = patterned(query.length);
  const output = new Float32Array(query.length);
  const probabilities = new Float32Array(batch * heads * length * length);
  const gradient = {
    gradQuery: new Float32Array(query.length),
    gradKey: new Float32Array(query.length),
    gradValue: new Float32Array(query.length),
  };
  const [rows, columns] = [2048, 704];
  const activations = patterned(rows * columns);
  const other = patterned(rows * columns);
  const result = new Float32Array(rows * columns);
  const result2 = new Float32Array(rows * columns);
  const weight = patterned(columns);
  const inverseRms = new Float32Array(rows);
  const parameterCount = 3_000_000;
  const parameter = patterned(parameterCount);
  const moments = {
    firstMoment: new Float32Array(parameterCount),
    secondMoment: new Float32Array(parameterCount),
  };
  const [tokens, vocabulary] = [2048, 128];
  const logits = patterned(tokens * vocabulary);
  const targets = Int32Array.from({ length: tokens }, (_, i) => (i * 31) % vocabulary);
  const logProbs = new Float32Array(tokens);
  const logSumExp = new Float32Array(tokens);
  const gradLogits = new Float32Array(tokens * vocabulary);
  return [
    {
      name: 'attention forward [16, 128, 4×64]',
      run: () => backend.attention({ ...shape, query, key, value, output, probabilities }),
    },
    {
      name: 'attention backward [16, 128, 4×64]',
      run: () =>
        backend.attentionBackward({
          ...shape,
          query,
          key,
          value,
          probabilities,
          gradOutput: output,
          ...gradient,
        }),
    },
    {
      name: 'rmsNorm [2048, 704]',
      run: () =>
        backend.rmsNorm({
          input: activations,
          weight,
          output: result,
          inverseRms,
          rows,
          columns,
          epsilon: 1e-6,
        }),
    },
    {
      name: 'rmsNormBackward [2048, 704]',
      run: () =>
        backend.rmsNormBackward({
          input: activations,
          weight,
          inverseRms,
          gradOutput: other,
          gradInput: result2,
          gradWeight: new Float32Array(columns),
          rows,
          columns,
        }),
    },
    {
      name: 'swiglu [2048, 704]',
      run: () => backend.swiglu({ gate: activations, up: other, output: result }),
    },
    {
      name: 'swigluBackward [2048, 704]',
      run: () =>
        backend.swigluBackward({
          gate: activations,
          up: other,
          gradOutput: other,
          gradGate: result,
          gradUp: result2,
        }),
    },
    {
      name: 'adamw [3M parameters]',
      run: () =>
        backend.adamw({
          parameter,
          gradient: parameter,
          ...moments,
          learningRate: 1e-9,
          beta1: 0.9,
          beta2: 0.999,
          epsilon: 1e-8,
          weightDecay: 0,
          step: 1,
        }),
    },
    {
      name: 'gatherLogProbs [2048, 128]',
      run: () =>
        backend.gatherLogProbs({
          logits,
          targets,
          rows: tokens,
          columns: vocabulary,
          logProbs,
          entropy: null,
          logSumExp,
        }),
    },
    {
      name: 'gatherLogProbsBackward [2048, 128]',
      run: () =>
        backend.gatherLogProbsBackward({
          logits,
          targets,
          rows: tokens,
          columns: vocabulary,
          logSumExp,
          gradLogProbs: logProbs,
          gradEntropy: null,
          gradLogits,
        }),
    },
  ];
}
