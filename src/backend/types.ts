/**
 * The kernel interface: the only place where numbers are crunched in bulk.
 *
 * Kernels know nothing of tensors, shapes objects or autograd. They take flat row-major
 * `Float32Array`s (views via `subarray` are fine) plus integer sizes, write into output arrays
 * the caller allocated, and return nothing. Validation happens once, in the tensor ops above;
 * kernels trust their arguments. Every kernel has a pure-TypeScript implementation (the
 * reference, `typescript.ts`) and may have a native one (`native.ts`, the C addon); one shared
 * test suite (`backend.suite.ts`) runs against every backend.
 *
 * Conventions: "accumulate" outputs are added into (`+=`), every other output is overwritten.
 */
export interface MatmulArguments {
  /** A: [batch][m×k] (or [k×m] when transposeA), row-major, batch stride `strideA` (0 = shared). */
  a: Float32Array;
  /** B: [batch][k×n] (or [n×k] when transposeB), batch stride `strideB` (0 = shared). */
  b: Float32Array;
  /** C: [batch][m×n], batch stride m·n. */
  c: Float32Array;
  batch: number;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  strideA: number;
  strideB: number;
  /** C = alpha·op(A)·op(B) + beta·C. @default alpha 1, beta 0 */
  alpha?: number;
  beta?: number;
}

/**
 * Causal multi-head attention with grouped-query heads, on the projection layout
 * (no transposes needed): q is [batch, queryLength, heads, headDim]; k and v are
 * [batch, keyCapacity, kvHeads, headDim] of which the first `keyLength` slots are used.
 * Query i sits at absolute slot `queryStart + i` and attends key slots j ≤ queryStart + i with
 * `keyMask[b·keyCapacity + j] !== 0` (no mask: all valid). A query with no valid key outputs 0.
 * Head h reads kv head ⌊h / (heads / kvHeads)⌋.
 */
export interface AttentionShape {
  batch: number;
  queryLength: number;
  keyLength: number;
  keyCapacity: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  queryStart: number;
  /** Usually 1/√headDim. */
  scale: number;
  /** [batch, keyCapacity], 1 = attend, 0 = padding. */
  keyMask: Float32Array | null;
}

export interface AttentionForwardArguments extends AttentionShape {
  query: Float32Array;
  key: Float32Array;
  value: Float32Array;
  /** [batch, queryLength, heads, headDim] */
  output: Float32Array;
  /**
   * [batch, heads, queryLength, keyLength] softmax probabilities, saved for the backward pass;
   * null in no-grad mode (the kernel then need not materialize them).
   */
  probabilities: Float32Array | null;
}

export interface AttentionBackwardArguments extends AttentionShape {
  query: Float32Array;
  key: Float32Array;
  value: Float32Array;
  probabilities: Float32Array;
  gradOutput: Float32Array;
  /** Accumulated, same layouts as query/key/value. */
  gradQuery: Float32Array;
  gradKey: Float32Array;
  gradValue: Float32Array;
}

export interface AdamWArguments {
  parameter: Float32Array;
  gradient: Float32Array;
  firstMoment: Float32Array;
  secondMoment: Float32Array;
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** 1-based step count, for bias correction. */
  step: number;
  /** Gradients are multiplied by this first (global-norm clipping). @default 1 */
  gradientScale?: number;
}

export interface KernelBackend {
  /** `typescript` or `native`. */
  readonly name: string;
  /** Human-readable, e.g. "native (OpenBLAS 0.3.21, 2 threads)". */
  readonly description: string;

  matmul(args: MatmulArguments): void;

  /** Row-wise softmax over `columns`; output may alias input. */
  softmax(input: Float32Array, output: Float32Array, rows: number, columns: number): void;
  /** Row-wise log-softmax over `columns`; output may alias input. */
  logSoftmax(input: Float32Array, output: Float32Array, rows: number, columns: number): void;

  /**
   * Fused log-softmax + gather for language-model scoring: for each row r,
   * logProbs[r] = logits[r, targets[r]] − logsumexp(logits[r]). When `entropy` is given it
   * receives −Σ p log p per row; when `logSumExp` is given it receives the row's logsumexp.
   */
  gatherLogProbs(args: {
    logits: Float32Array;
    targets: Int32Array;
    rows: number;
    columns: number;
    logProbs: Float32Array;
    entropy: Float32Array | null;
    logSumExp: Float32Array | null;
  }): void;

  /**
   * Backward of gatherLogProbs: gradLogits[r, c] += g[r]·(1[c = target] − softmax_c)
   * (+ the entropy term when gradEntropy is given). Rows with g[r] = 0 and no entropy
   * gradient may be skipped.
   */
  gatherLogProbsBackward(args: {
    logits: Float32Array;
    targets: Int32Array;
    rows: number;
    columns: number;
    logSumExp: Float32Array;
    gradLogProbs: Float32Array;
    gradEntropy: Float32Array | null;
    gradLogits: Float32Array;
  }): void;

  /** out = x / rms(x) · weight, per row; saves 1/rms per row into inverseRms. */
  rmsNorm(args: {
    input: Float32Array;
    weight: Float32Array;
    output: Float32Array;
    inverseRms: Float32Array;
    rows: number;
    columns: number;
    epsilon: number;
  }): void;
  /** gradInput accumulated; gradWeight accumulated. */
  rmsNormBackward(args: {
    input: Float32Array;
    weight: Float32Array;
    inverseRms: Float32Array;
    gradOutput: Float32Array;
    gradInput: Float32Array;
    gradWeight: Float32Array | null;
    rows: number;
    columns: number;
  }): void;

  /** out = (x − mean)/sqrt(var + ε) · weight + bias, per row; saves mean and 1/std. */
  layerNorm(args: {
    input: Float32Array;
    weight: Float32Array;
    bias: Float32Array | null;
    output: Float32Array;
    mean: Float32Array;
    inverseStd: Float32Array;
    rows: number;
    columns: number;
    epsilon: number;
  }): void;
  layerNormBackward(args: {
    input: Float32Array;
    weight: Float32Array;
    mean: Float32Array;
    inverseStd: Float32Array;
    gradOutput: Float32Array;
    gradInput: Float32Array;
    gradWeight: Float32Array | null;
    gradBias: Float32Array | null;
    rows: number;
    columns: number;
  }): void;

  /**
   * Rotary position embedding, Hugging Face "rotate_half" convention (pairs i and i + D/2),
   * on x laid out [batch, length, heads, headDim], in place. positions: [batch, length].
   * inverse = true rotates by −angle (the backward pass).
   */
  rope(args: {
    data: Float32Array;
    positions: Int32Array;
    batch: number;
    length: number;
    heads: number;
    headDim: number;
    theta: number;
    inverse: boolean;
  }): void;

  attention(args: AttentionForwardArguments): void;
  attentionBackward(args: AttentionBackwardArguments): void;

  /** SwiGLU gate: out = silu(gate) · up, elementwise. */
  swiglu(gate: Float32Array, up: Float32Array, output: Float32Array): void;
  /** Accumulates into gradGate and gradUp. */
  swigluBackward(
    gate: Float32Array,
    up: Float32Array,
    gradOutput: Float32Array,
    gradGate: Float32Array,
    gradUp: Float32Array,
  ): void;

  /** GELU, tanh approximation (GPT-2's "gelu_new"). */
  gelu(input: Float32Array, output: Float32Array): void;
  geluBackward(input: Float32Array, gradOutput: Float32Array, gradInput: Float32Array): void;

  /** One AdamW step (decoupled weight decay), in place on parameter and moments. */
  adamw(args: AdamWArguments): void;

  /** Σ x² (in float64 accumulation), for global-norm clipping. */
  sumOfSquares(input: Float32Array): number;
  /** y += alpha · x */
  axpy(alpha: number, x: Float32Array, y: Float32Array): void;
}
