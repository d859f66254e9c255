/**
 * The kernel interface: the only place where numbers are crunched in bulk.
 *
 * Kernels know nothing of tensors, shapes objects or autograd. They take flat row-major
 * `Float32Array`s (views via `subarray` are fine) plus integer sizes, write into output arrays
 * the caller allocated, and return nothing (`sumOfSquares` returns its sum). Validation happens
 * once, in the tensor ops above; kernels trust their arguments. Every kernel has a
 * pure-TypeScript implementation (the reference, `typescript.ts`) and may have a native one
 * (`native.ts`, the C addon); one shared test suite (`backend.suite.ts`) runs against every
 * backend.
 *
 * Conventions: "accumulate" outputs are added into (`+=`), every other output is overwritten.
 *
 * `kernelSignatures` below is the one statement of every kernel's arguments: their names,
 * order, kinds and documentation. The argument types of `KernelBackend` are derived from it,
 * the native backend passes arguments to C in its order, and the C addon reads them through
 * native/src/kernel_signatures.h, which `npm run generate:kernels` writes from it (a test
 * checks that the committed header is current). Adding a kernel: an entry here, a reference
 * implementation (`reference/*.ts`, listed in `typescript.ts`), and a C entry point under
 * native/src/ — then regenerate the header.
 */

/** How an argument crosses into C: an array (possibly null), a size, a number or a flag. */
export type ArgumentKind =
  'floats' | 'optionalFloats' | 'doubles' | 'ints' | 'bfloat16s' | 'size' | 'number' | 'boolean';

interface TypeOfKind {
  floats: Float32Array;
  optionalFloats: Float32Array | null;
  doubles: Float64Array;
  ints: Int32Array;
  /** bfloat16 bit patterns: the upper 16 bits of a float32 (see tensor/bfloat16.ts). */
  bfloat16s: Uint16Array;
  /** A non-negative integer below 2⁴⁰ (the addon refuses anything else). */
  size: number;
  number: number;
  boolean: boolean;
}

const floats = 'floats';
const optionalFloats = 'optionalFloats';
const doubles = 'doubles';
const ints = 'ints';
const bfloat16s = 'bfloat16s';
const size = 'size';
const number = 'number';
const boolean = 'boolean';
/** A number the caller may leave out; the native backend then passes `value`. */
const numberDefaultingTo = <Value extends number>(value: Value) =>
  ({ kind: number, default: value }) as const;

/** The kinds of arrays, whose lengths the table states (`sized`). */
type ArrayKind = 'floats' | 'optionalFloats' | 'doubles' | 'ints' | 'bfloat16s';

/**
 * An array and the elements it must hold, as an expression over the kernel's own argument
 * names: sizes (`rows * columns`), `length(other)` (as many as another array), and
 * `span(count, stride, item)` (a batch of `count` items `stride` apart, each `item` long: the
 * last item's start plus one item, 0 when empty). The native addon's size checks are generated
 * from these (native-header.ts): a call whose arrays are too short is a RangeError there, never
 * a read or write out of bounds. A null optional array is not checked.
 */
const sized = <Kind extends ArrayKind>(kind: Kind, length: string) => ({ kind, length }) as const;

/** An argument's kind, a number's kind with its default, or an array with its length. */
export type ArgumentSignature =
  ArgumentKind | { kind: 'number'; default: number } | { kind: ArrayKind; length: string };

/**
 * Causal multi-head attention with grouped-query heads, on the projection layout
 * (no transposes needed): q is [batch, queryLength, heads, headDim]; k and v are
 * [batch, keyCapacity, kvHeads, headDim] of which the first `keyLength` slots are used.
 * Query i sits at absolute slot `queryStart + i` and attends key slots j ≤ queryStart + i with
 * `keyMask[b·keyCapacity + j] !== 0` (no mask: all valid). A query with no valid key outputs 0.
 * Head h reads kv head ⌊h / (heads / kvHeads)⌋.
 */
const attentionShape = {
  /** [batch, keyCapacity], 1 = attend, 0 = padding. */
  keyMask: sized(optionalFloats, 'batch * keyCapacity'),
  batch: size,
  queryLength: size,
  keyLength: size,
  keyCapacity: size,
  heads: size,
  kvHeads: size,
  headDim: size,
  queryStart: size,
  /** Usually 1/√headDim. */
  scale: number,
} as const;

/**
 * C = alpha·A·op(B) + beta·C summed in one fixed order whatever m is, with B of element type
 * `b` (matmulBfloat16, matmulFixedOrder).
 */
function fixedOrderProduct<Element extends typeof floats | typeof bfloat16s>(b: Element) {
  return {
    /** A: [m×k] row-major. */
    a: sized(floats, 'm * k'),
    /** B: [k×n], or [n×k] when transposeB (a Linear weight [out, in]). */
    b: sized(b, 'k * n'),
    /** C: [m×n]. */
    c: sized(floats, 'm * n'),
    m: size,
    n: size,
    k: size,
    transposeB: boolean,
    /** @default 1 */
    alpha: numberDefaultingTo(1),
    /** 0 overwrites C, 1 accumulates into it. @default 0 */
    beta: numberDefaultingTo(0),
  } as const;
}

export const kernelSignatures = {
  /** C = alpha·op(A)·op(B) + beta·C, for each of `batch` products. */
  matmul: {
    /** A: [batch][m×k] (or [k×m] when transposeA), row-major, batch stride `strideA` (0 = shared). */
    a: sized(floats, 'span(batch, strideA, m * k)'),
    /** B: [batch][k×n] (or [n×k] when transposeB), batch stride `strideB` (0 = shared). */
    b: sized(floats, 'span(batch, strideB, k * n)'),
    /** C: [batch][m×n], batch stride m·n. */
    c: sized(floats, 'batch * m * n'),
    batch: size,
    m: size,
    n: size,
    k: size,
    transposeA: boolean,
    transposeB: boolean,
    strideA: size,
    strideB: size,
    /** @default 1 */
    alpha: numberDefaultingTo(1),
    /** 0 overwrites C, 1 accumulates into it. @default 0 */
    beta: numberDefaultingTo(0),
  },
  /**
   * C = alpha·A·op(B) + beta·C with A float32 and B bfloat16 (frozen weights kept in half the
   * bytes). Widening bfloat16 to float32 is exact, so this is the float32 product with B's
   * widened values; every C entry is summed in one fixed order that does not depend on m (the
   * rows of A), so a row gives the same bits whether it is multiplied alone (decoding) or with
   * many others (scoring).
   */
  matmulBfloat16: fixedOrderProduct(bfloat16s),
  /**
   * matmulBfloat16's product and summation order with a float32 B: every C entry is summed in
   * one fixed order whatever m is. For weights whose products must give a row the same bits
   * alone (a decode step) as among many (scoring) where the float32 kernels (matmul) choose
   * their order by shape: a LoRA adapter's factors.
   */
  matmulFixedOrder: fixedOrderProduct(floats),
  // ---- matmulGemmOrder (float32 weights summed alike at every m) ----
  /**
   * C = A·op(B), float32, every C entry summed in the order of the native float32 GEMM
   * kernels whatever m is: k cut into 256-deep slices from 0, one FMA chain per entry and
   * slice, the slices added in order. For float32 weights whose rows must come out with the
   * same bits decoded alone as scored with their sequence (frozen layers and the tied LM head);
   * unlike matmulFixedOrder it keeps the GEMM kernels' speed at many rows. The TypeScript
   * backend sums each entry in float64 (any row count gives the same row there too).
   */
  matmulGemmOrder: {
    /** A: [m×k] row-major. */
    a: sized(floats, 'm * k'),
    /** B: [k×n], or [n×k] when transposeB (a Linear weight [out, in]). */
    b: sized(floats, 'k * n'),
    /** C: [m×n], overwritten. */
    c: sized(floats, 'm * n'),
    m: size,
    n: size,
    k: size,
    transposeB: boolean,
  },
  // ---- end matmulGemmOrder ----
  /** Row-wise softmax over `columns`; output may alias input. */
  softmax: {
    input: sized(floats, 'rows * columns'),
    output: sized(floats, 'rows * columns'),
    rows: size,
    columns: size,
  },
  /** Row-wise log-softmax over `columns`; output may alias input. */
  logSoftmax: {
    input: sized(floats, 'rows * columns'),
    output: sized(floats, 'rows * columns'),
    rows: size,
    columns: size,
  },
  /**
   * Fused log-softmax + gather for language-model scoring: for each row r,
   * logProbs[r] = logits[r, targets[r]] − logsumexp(logits[r]). When `entropy` is given it
   * receives −Σ p log p per row; when `logSumExp` is given it receives the row's logsumexp.
   */
  gatherLogProbs: {
    logits: sized(floats, 'rows * columns'),
    targets: sized(ints, 'rows'),
    rows: size,
    columns: size,
    logProbs: sized(floats, 'rows'),
    entropy: sized(optionalFloats, 'rows'),
    logSumExp: sized(optionalFloats, 'rows'),
  },
  /**
   * Untruncated sampling from softmax(logits) at temperature 1, in float64 exactly as plain
   * JavaScript computes it — exp is fdlibm's (V8's Math.exp), sums run left to right — so every
   * backend gives the same bits and the same token for the same uniform. For each row r:
   * maximum[r] = max_j logits[r, j] (NaN if any entry is NaN); e_j = exp(logits[r, j] −
   * maximum[r]); total[r] = Σ_j e_j in index order. When uniforms[r] ≥ 0, tokens[r] = the first
   * j at which uniforms[r]·total[r] − Σ_{i≤j} e_i < 0 (if rounding leaves none, the last j with
   * e_j > 0, else 0); rows with a negative uniform leave tokens[r] as it was.
   * log p(token) = logits[r, token] − (maximum[r] + log total[r]).
   */
  sampleRows: {
    logits: sized(floats, 'rows * columns'),
    rows: size,
    columns: size,
    /** [rows] in [0, 1), or negative: no draw for that row. */
    uniforms: sized(doubles, 'rows'),
    tokens: sized(ints, 'rows'),
    maximum: sized(floats, 'rows'),
    total: sized(doubles, 'rows'),
    /**
     * When given, logProbs[r] of each row that draws: what this backend's gatherLogProbs gives
     * for tokens[r], bit for bit, computed while the row is at hand instead of in a second
     * pass over the logits; rows that draw nothing leave theirs as it was.
     */
    logProbs: sized(optionalFloats, 'rows'),
  },
  /**
   * Backward of gatherLogProbs: gradLogits[r, c] += g[r]·(1[c = target] − softmax_c)
   * (+ the entropy term when gradEntropy is given). Rows with g[r] = 0 and no entropy
   * gradient may be skipped (with beta 0: written as zeros).
   */
  gatherLogProbsBackward: {
    logits: sized(floats, 'rows * columns'),
    targets: sized(ints, 'rows'),
    rows: size,
    columns: size,
    logSumExp: sized(floats, 'rows'),
    gradLogProbs: sized(floats, 'rows'),
    gradEntropy: sized(optionalFloats, 'rows'),
    gradLogits: sized(floats, 'rows * columns'),
    /**
     * 1 adds into gradLogits (the convention above); 0 writes it, as 0 + the value the sum
     * would add, reading nothing there first (a new, unfilled gradient buffer). @default 1
     */
    beta: numberDefaultingTo(1),
  },
  /**
   * Two log-distributions compared row by row in one pass: the trust region's exact KL and TV
   * and what the probability-shift-by-rank diagnostic needs (src/rl/kl.ts, total-variation.ts,
   * rank-shift.ts state the definitions; these are their formulas). With p = exp(oldLogProbs[r])
   * and q = exp(newLogProbs[r]), d_v = log p_v − log q_v, and every sum in float64:
   * kl[r] = Σ_v p_v·(d_v + expm1(−d_v)) where d_v ≥ −1, p_v·(d_v − 1) + q_v where d_v < −1,
   * and q_v where log p_v = −∞; totalVariation[r] = ½ Σ_v −max(p_v, q_v)·expm1(−|d_v|) (entries
   * with p_v = q_v = 0 left out), clamped to [0, 1]; oldTotal[r] = Σ p_v, newTotal[r] = Σ q_v.
   * A NaN entry makes its row's kl, totalVariation and totals NaN.
   */
  compareLogDistributions: {
    /** [rows, columns] log p (π_old), log-softmax'ed rows. */
    oldLogProbs: sized(floats, 'rows * columns'),
    /** [rows, columns] log q (π_new). */
    newLogProbs: sized(floats, 'rows * columns'),
    rows: size,
    /** The vocabulary; below 2³¹ (token ids are int32). */
    columns: size,
    /** [rows] KL(p ‖ q). */
    kl: sized(floats, 'rows'),
    /** [rows] TV(p, q) = ½ Σ |p − q|. */
    totalVariation: sized(floats, 'rows'),
    /** Ranks kept per row in `topTokens` (0: none). */
    topCount: size,
    /**
     * [rows, topCount] the ids of each row's `topCount` largest log p, best first, ties to the
     * lower id; NaN entries are never ranked, and −1 fills the places a row cannot (fewer
     * ranked entries than topCount).
     */
    topTokens: sized(ints, 'rows * topCount'),
    /** [rows] Σ_v p_v. */
    oldTotal: sized(doubles, 'rows'),
    /** [rows] Σ_v q_v. */
    newTotal: sized(doubles, 'rows'),
  },
  /** out = x / rms(x) · weight, per row; saves 1/rms per row into inverseRms. */
  rmsNorm: {
    input: sized(floats, 'rows * columns'),
    weight: sized(floats, 'columns'),
    output: sized(floats, 'rows * columns'),
    inverseRms: sized(floats, 'rows'),
    rows: size,
    columns: size,
    epsilon: number,
  },
  /** gradInput accumulated; gradWeight accumulated. */
  rmsNormBackward: {
    input: sized(floats, 'rows * columns'),
    weight: sized(floats, 'columns'),
    inverseRms: sized(floats, 'rows'),
    gradOutput: sized(floats, 'rows * columns'),
    gradInput: sized(floats, 'rows * columns'),
    gradWeight: sized(optionalFloats, 'columns'),
    rows: size,
    columns: size,
  },
  /** out = (x − mean)/sqrt(var + ε) · weight + bias, per row; saves mean and 1/std. */
  layerNorm: {
    input: sized(floats, 'rows * columns'),
    weight: sized(floats, 'columns'),
    bias: sized(optionalFloats, 'columns'),
    output: sized(floats, 'rows * columns'),
    mean: sized(floats, 'rows'),
    inverseStd: sized(floats, 'rows'),
    rows: size,
    columns: size,
    epsilon: number,
  },
  /** gradInput, gradWeight and gradBias accumulated. */
  layerNormBackward: {
    input: sized(floats, 'rows * columns'),
    weight: sized(floats, 'columns'),
    mean: sized(floats, 'rows'),
    inverseStd: sized(floats, 'rows'),
    gradOutput: sized(floats, 'rows * columns'),
    gradInput: sized(floats, 'rows * columns'),
    gradWeight: sized(optionalFloats, 'columns'),
    gradBias: sized(optionalFloats, 'columns'),
    rows: size,
    columns: size,
  },
  /**
   * Rotary position embedding, Hugging Face "rotate_half" convention (pairs i and i + D/2):
   * `source` rotated into `data`, both laid out [batch, length, heads, headDim]; the same
   * array for in place. positions: [batch, length]. inverse = true rotates by −angle (the
   * backward pass).
   */
  rope: {
    data: sized(floats, 'batch * length * heads * headDim'),
    source: sized(floats, 'batch * length * heads * headDim'),
    positions: sized(ints, 'batch * length'),
    batch: size,
    length: size,
    heads: size,
    headDim: size,
    theta: number,
    inverse: boolean,
  },
  /** Causal grouped-query attention (see `AttentionShape`). */
  attention: {
    query: sized(floats, 'batch * queryLength * heads * headDim'),
    key: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    value: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    /** [batch, queryLength, heads, headDim] */
    output: sized(floats, 'batch * queryLength * heads * headDim'),
    /**
     * [batch, heads, queryLength, keyLength] softmax probabilities, saved for the backward
     * pass; null in no-grad mode (the kernel then need not materialize them).
     */
    probabilities: sized(optionalFloats, 'batch * heads * queryLength * keyLength'),
    ...attentionShape,
  },
  /** Backward of attention; gradQuery, gradKey and gradValue accumulated (same layouts). */
  attentionBackward: {
    query: sized(floats, 'batch * queryLength * heads * headDim'),
    key: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    value: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    probabilities: sized(floats, 'batch * heads * queryLength * keyLength'),
    gradOutput: sized(floats, 'batch * queryLength * heads * headDim'),
    gradQuery: sized(floats, 'batch * queryLength * heads * headDim'),
    gradKey: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    gradValue: sized(floats, 'batch * keyCapacity * kvHeads * headDim'),
    ...attentionShape,
  },
  /** SwiGLU gate: out = silu(gate) · up, elementwise. */
  swiglu: {
    gate: floats,
    up: sized(floats, 'length(gate)'),
    output: sized(floats, 'length(gate)'),
  },
  /** Accumulates into gradGate and gradUp. */
  swigluBackward: {
    gate: floats,
    up: sized(floats, 'length(gate)'),
    gradOutput: sized(floats, 'length(gate)'),
    gradGate: sized(floats, 'length(gate)'),
    gradUp: sized(floats, 'length(gate)'),
    /**
     * 1 adds into gradGate and gradUp (the convention above); 0 writes it, as 0 + the value the sum
     * would add, reading nothing there first (a new, unfilled gradient buffer). @default 1
     */
    beta: numberDefaultingTo(1),
  },
  /** GELU, tanh approximation (GPT-2's "gelu_new"). */
  gelu: { input: floats, output: sized(floats, 'length(input)') },
  /** gradInput accumulated. */
  geluBackward: {
    input: floats,
    gradOutput: sized(floats, 'length(input)'),
    gradInput: sized(floats, 'length(input)'),
  },
  /** One AdamW step (decoupled weight decay), in place on parameter and moments. */
  adamw: {
    parameter: floats,
    gradient: sized(floats, 'length(parameter)'),
    firstMoment: sized(floats, 'length(parameter)'),
    secondMoment: sized(floats, 'length(parameter)'),
    learningRate: number,
    beta1: number,
    beta2: number,
    epsilon: number,
    weightDecay: number,
    /** 1-based step count, for bias correction. */
    step: number,
    /** Gradients are multiplied by this first (global-norm clipping). @default 1 */
    gradientScale: numberDefaultingTo(1),
  },
  /** Σ x² (in float64 accumulation), for global-norm clipping; returns the sum. */
  sumOfSquares: { input: floats },
  /** y += alpha · x */
  axpy: {
    alpha: number,
    x: floats,
    y: sized(floats, 'length(x)'),
    /**
     * 1 adds into y (the convention above); 0 writes it, as 0 + the value the sum
     * would add, reading nothing there first (a new, unfilled gradient buffer). @default 1
     */
    beta: numberDefaultingTo(1),
  },

  // ---- exact element-wise kernels (decode hot path; bit for bit the reference) ----

  /**
   * output = a + fround(scale·b) element-wise: the product in float64, rounded to float32, then
   * the float32 sum (never one fused multiply-add), so every backend gives the same bits and a
   * row's value does not depend on where it sits. A LoRA layer's base + s·up; with scale 1, a
   * residual add. `output` may alias `a` or `b`.
   */
  addScaled: {
    a: floats,
    b: sized(floats, 'length(a)'),
    scale: number,
    output: sized(floats, 'length(a)'),
  },
  /**
   * A residual add and the RMSNorm after it in one pass: sum = input + residual (float32), then
   * rmsNorm of sum, with the bits this backend's `rmsNorm` gives that sum. `sum` may alias
   * `input`.
   */
  addRmsNorm: {
    input: sized(floats, 'rows * columns'),
    residual: sized(floats, 'rows * columns'),
    weight: sized(floats, 'columns'),
    sum: sized(floats, 'rows * columns'),
    output: sized(floats, 'rows * columns'),
    inverseRms: sized(floats, 'rows'),
    rows: size,
    columns: size,
    epsilon: number,
  },
} as const satisfies Record<string, Record<string, ArgumentSignature>>;

export type KernelName = keyof typeof kernelSignatures;

type Signature<Name extends KernelName> = (typeof kernelSignatures)[Name];
type TypeOf<Argument> = Argument extends ArgumentKind
  ? TypeOfKind[Argument]
  : Argument extends { kind: infer Kind extends ArgumentKind }
    ? TypeOfKind[Kind]
    : never;
type ArgumentsWithDefaults<Name extends KernelName> = {
  [Argument in keyof Signature<Name>]: Signature<Name>[Argument] extends { default: number }
    ? Argument
    : never;
}[keyof Signature<Name>];
type AllArguments<Name extends KernelName> = {
  -readonly [Argument in keyof Signature<Name>]: TypeOf<Signature<Name>[Argument]>;
};

/**
 * The named arguments of one kernel, typed and documented from its signature (those with a
 * default are optional).
 */
export type KernelArguments<Name extends KernelName> = Omit<
  AllArguments<Name>,
  ArgumentsWithDefaults<Name>
> &
  Partial<Pick<AllArguments<Name>, ArgumentsWithDefaults<Name>>>;

/** What a kernel returns: the sum for `sumOfSquares`, nothing for the others. */
type KernelResult<Name extends KernelName> = Name extends 'sumOfSquares' ? number : void;

export type MatmulArguments = KernelArguments<'matmul'>;
export type MatmulBfloat16Arguments = KernelArguments<'matmulBfloat16'>;
export type MatmulFixedOrderArguments = KernelArguments<'matmulFixedOrder'>;
export type MatmulGemmOrderArguments = KernelArguments<'matmulGemmOrder'>;
/** The attention arguments that are not arrays of its projections or results. */
export type AttentionShape = Omit<
  KernelArguments<'attention'>,
  'query' | 'key' | 'value' | 'output' | 'probabilities'
>;
export type AttentionForwardArguments = KernelArguments<'attention'>;
export type AttentionBackwardArguments = KernelArguments<'attentionBackward'>;
export type AdamWArguments = KernelArguments<'adamw'>;

/** Every kernel, each taking its named arguments as one object. */
export type KernelBackend = {
  /** `typescript` or `native`. */
  readonly name: string;
  /** Human-readable, e.g. "native (OpenBLAS 0.3.21, 2 threads)". */
  readonly description: string;
} & {
  readonly [Name in keyof typeof kernelSignatures]: (
    args: KernelArguments<Name>,
  ) => KernelResult<Name>;
};
