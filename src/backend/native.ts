/**
 * The native backend: thin wrappers that pass each kernel's arguments positionally to the C
 * addon (native/, built by `node-gyp` into build/Release/teamtr_native.node at install).
 * Positional arguments keep the per-call cost to a few typed-array lookups in C, which matters
 * for token-by-token generation where kernels are small and called often.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KernelBackend } from './types.js';

type FloatArray = Float32Array;
type OptionalFloatArray = Float32Array | null;

/** The functions the C addon exports (see native/src/addon.c). */
interface NativeAddon {
  info(): NativeBuildInfo;
  setThreads(threads: number): void;
  matmul(
    a: FloatArray,
    b: FloatArray,
    c: FloatArray,
    batch: number,
    m: number,
    n: number,
    k: number,
    transposeA: boolean,
    transposeB: boolean,
    strideA: number,
    strideB: number,
    alpha: number,
    beta: number,
  ): void;
  softmax(input: FloatArray, output: FloatArray, rows: number, columns: number): void;
  logSoftmax(input: FloatArray, output: FloatArray, rows: number, columns: number): void;
  gatherLogProbs(
    logits: FloatArray,
    targets: Int32Array,
    rows: number,
    columns: number,
    logProbs: FloatArray,
    entropy: OptionalFloatArray,
    logSumExp: OptionalFloatArray,
  ): void;
  gatherLogProbsBackward(
    logits: FloatArray,
    targets: Int32Array,
    rows: number,
    columns: number,
    logSumExp: FloatArray,
    gradLogProbs: FloatArray,
    gradEntropy: OptionalFloatArray,
    gradLogits: FloatArray,
  ): void;
  rmsNorm(
    input: FloatArray,
    weight: FloatArray,
    output: FloatArray,
    inverseRms: FloatArray,
    rows: number,
    columns: number,
    epsilon: number,
  ): void;
  rmsNormBackward(
    input: FloatArray,
    weight: FloatArray,
    inverseRms: FloatArray,
    gradOutput: FloatArray,
    gradInput: FloatArray,
    gradWeight: OptionalFloatArray,
    rows: number,
    columns: number,
  ): void;
  layerNorm(
    input: FloatArray,
    weight: FloatArray,
    bias: OptionalFloatArray,
    output: FloatArray,
    mean: FloatArray,
    inverseStd: FloatArray,
    rows: number,
    columns: number,
    epsilon: number,
  ): void;
  layerNormBackward(
    input: FloatArray,
    weight: FloatArray,
    mean: FloatArray,
    inverseStd: FloatArray,
    gradOutput: FloatArray,
    gradInput: FloatArray,
    gradWeight: OptionalFloatArray,
    gradBias: OptionalFloatArray,
    rows: number,
    columns: number,
  ): void;
  rope(
    data: FloatArray,
    positions: Int32Array,
    batch: number,
    length: number,
    heads: number,
    headDim: number,
    theta: number,
    inverse: boolean,
  ): void;
  attention(
    query: FloatArray,
    key: FloatArray,
    value: FloatArray,
    output: FloatArray,
    probabilities: OptionalFloatArray,
    keyMask: OptionalFloatArray,
    batch: number,
    queryLength: number,
    keyLength: number,
    keyCapacity: number,
    heads: number,
    kvHeads: number,
    headDim: number,
    queryStart: number,
    scale: number,
  ): void;
  attentionBackward(
    query: FloatArray,
    key: FloatArray,
    value: FloatArray,
    probabilities: FloatArray,
    gradOutput: FloatArray,
    gradQuery: FloatArray,
    gradKey: FloatArray,
    gradValue: FloatArray,
    keyMask: OptionalFloatArray,
    batch: number,
    queryLength: number,
    keyLength: number,
    keyCapacity: number,
    heads: number,
    kvHeads: number,
    headDim: number,
    queryStart: number,
    scale: number,
  ): void;
  swiglu(gate: FloatArray, up: FloatArray, output: FloatArray): void;
  swigluBackward(
    gate: FloatArray,
    up: FloatArray,
    gradOutput: FloatArray,
    gradGate: FloatArray,
    gradUp: FloatArray,
  ): void;
  gelu(input: FloatArray, output: FloatArray): void;
  geluBackward(input: FloatArray, gradOutput: FloatArray, gradInput: FloatArray): void;
  adamw(
    parameter: FloatArray,
    gradient: FloatArray,
    firstMoment: FloatArray,
    secondMoment: FloatArray,
    learningRate: number,
    beta1: number,
    beta2: number,
    epsilon: number,
    weightDecay: number,
    step: number,
    gradientScale: number,
  ): void;
  sumOfSquares(input: FloatArray): number;
  axpy(alpha: number, x: FloatArray, y: FloatArray): void;
}

/**
 * build/Release/teamtr_native.node, two levels above this file in both src/ and dist/;
 * TEAMTR_NATIVE_ADDON overrides it (a build elsewhere, or a missing path to test fallbacks).
 */
export const NATIVE_ADDON_PATH =
  process.env.TEAMTR_NATIVE_ADDON ??
  path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    'build',
    'Release',
    'teamtr_native.node',
  );

let loadProblem: string | null = null;

/** Why the last `loadNativeBackend()` returned null (missing file, load error), or null. */
export function nativeBackendProblem(): string | null {
  return loadProblem;
}

function loadAddon(): NativeAddon | null {
  if (!existsSync(NATIVE_ADDON_PATH)) {
    loadProblem = `the native addon is not built (${NATIVE_ADDON_PATH} does not exist)`;
    return null;
  }
  try {
    const require = createRequire(import.meta.url);
    loadProblem = null;
    return require(NATIVE_ADDON_PATH) as NativeAddon;
  } catch (error) {
    loadProblem = `the native addon failed to load: ${(error as Error).message}`;
    return null;
  }
}

let cached: KernelBackend | null | undefined;
let loadedAddon: NativeAddon | null = null;

/** The native backend, or null when the addon is not built or cannot be loaded. */
export function loadNativeBackend(): KernelBackend | null {
  if (cached !== undefined) return cached;
  loadedAddon = loadAddon();
  cached = loadedAddon ? wrapAddon(loadedAddon) : null;
  return cached;
}

/** Which BLAS was linked, which code runs large products, and the SIMD width of the rest. */
export interface NativeBuildInfo {
  /** "openblas" or "none" (portable C kernels only). */
  blas: string;
  blasVersion: string;
  /** "openblas" or "own" (the addon's packed kernel, chosen where it is faster). */
  sgemm: string;
  /** Floats per SIMD vector the addon was compiled for (16 = AVX-512). */
  vectorWidth: number;
  threads: number;
}

function describe(info: NativeBuildInfo): string {
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const simd = info.vectorWidth === 16 ? 'AVX-512' : `${info.vectorWidth * 32}-bit SIMD`;
  if (info.sgemm === 'openblas') return `native (OpenBLAS ${info.blasVersion}, ${threads})`;
  if (info.blas === 'openblas') {
    return `native (own ${simd} sgemm, OpenBLAS ${info.blasVersion} linked; ${threads})`;
  }
  return `native (portable C kernels, ${simd}, ${threads})`;
}

/** Build details of the loaded addon, or null when it is not available. */
export function nativeBuildInfo(): NativeBuildInfo | null {
  return loadNativeBackend() ? loadedAddon!.info() : null;
}

/**
 * Sets the native kernels' thread count (default: TEAMTR_NUM_THREADS, else every CPU this
 * process may use). For benchmarks; returns false when the addon is not available.
 */
export function setNativeThreads(threads: number): boolean {
  if (!loadNativeBackend()) return false;
  loadedAddon!.setThreads(threads);
  return true;
}

function wrapAddon(addon: NativeAddon): KernelBackend {
  return {
    name: 'native',
    get description() {
      return describe(addon.info());
    },
    matmul: (args) =>
      addon.matmul(
        args.a,
        args.b,
        args.c,
        args.batch,
        args.m,
        args.n,
        args.k,
        args.transposeA,
        args.transposeB,
        args.strideA,
        args.strideB,
        args.alpha ?? 1,
        args.beta ?? 0,
      ),
    softmax: (input, output, rows, columns) => addon.softmax(input, output, rows, columns),
    logSoftmax: (input, output, rows, columns) => addon.logSoftmax(input, output, rows, columns),
    gatherLogProbs: (args) =>
      addon.gatherLogProbs(
        args.logits,
        args.targets,
        args.rows,
        args.columns,
        args.logProbs,
        args.entropy,
        args.logSumExp,
      ),
    gatherLogProbsBackward: (args) =>
      addon.gatherLogProbsBackward(
        args.logits,
        args.targets,
        args.rows,
        args.columns,
        args.logSumExp,
        args.gradLogProbs,
        args.gradEntropy,
        args.gradLogits,
      ),
    rmsNorm: (args) =>
      addon.rmsNorm(
        args.input,
        args.weight,
        args.output,
        args.inverseRms,
        args.rows,
        args.columns,
        args.epsilon,
      ),
    rmsNormBackward: (args) =>
      addon.rmsNormBackward(
        args.input,
        args.weight,
        args.inverseRms,
        args.gradOutput,
        args.gradInput,
        args.gradWeight,
        args.rows,
        args.columns,
      ),
    layerNorm: (args) =>
      addon.layerNorm(
        args.input,
        args.weight,
        args.bias,
        args.output,
        args.mean,
        args.inverseStd,
        args.rows,
        args.columns,
        args.epsilon,
      ),
    layerNormBackward: (args) =>
      addon.layerNormBackward(
        args.input,
        args.weight,
        args.mean,
        args.inverseStd,
        args.gradOutput,
        args.gradInput,
        args.gradWeight,
        args.gradBias,
        args.rows,
        args.columns,
      ),
    rope: (args) =>
      addon.rope(
        args.data,
        args.positions,
        args.batch,
        args.length,
        args.heads,
        args.headDim,
        args.theta,
        args.inverse,
      ),
    attention: (args) =>
      addon.attention(
        args.query,
        args.key,
        args.value,
        args.output,
        args.probabilities,
        args.keyMask,
        args.batch,
        args.queryLength,
        args.keyLength,
        args.keyCapacity,
        args.heads,
        args.kvHeads,
        args.headDim,
        args.queryStart,
        args.scale,
      ),
    attentionBackward: (args) =>
      addon.attentionBackward(
        args.query,
        args.key,
        args.value,
        args.probabilities,
        args.gradOutput,
        args.gradQuery,
        args.gradKey,
        args.gradValue,
        args.keyMask,
        args.batch,
        args.queryLength,
        args.keyLength,
        args.keyCapacity,
        args.heads,
        args.kvHeads,
        args.headDim,
        args.queryStart,
        args.scale,
      ),
    swiglu: (gate, up, output) => addon.swiglu(gate, up, output),
    swigluBackward: (gate, up, gradOutput, gradGate, gradUp) =>
      addon.swigluBackward(gate, up, gradOutput, gradGate, gradUp),
    gelu: (input, output) => addon.gelu(input, output),
    geluBackward: (input, gradOutput, gradInput) =>
      addon.geluBackward(input, gradOutput, gradInput),
    adamw: (args) =>
      addon.adamw(
        args.parameter,
        args.gradient,
        args.firstMoment,
        args.secondMoment,
        args.learningRate,
        args.beta1,
        args.beta2,
        args.epsilon,
        args.weightDecay,
        args.step,
        args.gradientScale ?? 1,
      ),
    sumOfSquares: (input) => addon.sumOfSquares(input),
    axpy: (alpha, x, y) => addon.axpy(alpha, x, y),
  };
}
