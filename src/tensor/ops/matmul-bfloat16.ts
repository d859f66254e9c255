import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import {
  createResult,
  formatShape,
  gradientToWrite,
  isGradientEnabled,
  shapeSize,
  type Tensor,
} from '../tensor.js';

/**
 * C = A·op(W) summed in one fixed order whatever M is: a: [..., M, K]; w: [K, N], or [N, K] with
 * transposeB (a Linear weight [out, in]). The leading dimensions of a fold into M, so the whole
 * product is one kernel call (`matmulBfloat16` for a weight stored in bfloat16 by
 * `Tensor.storeAsBfloat16`; for a float32 one `matmulGemmOrder`, or `matmulFixedOrder` when it
 * is narrow, see `summedAsGemm`; backend/types.ts states each order): a token's row comes out
 * with the same bits when decoded alone as when scored with the rest of its sequence.
 *
 * Gradients need no fixed order (no sampled token depends on them): dA comes from the bfloat16
 * kernel on the other layout of a bfloat16 W, which is frozen (what lets a LoRA adapter on a
 * bfloat16 base still train the layers below it), and from the ordinary float32 product for a
 * float32 W, which may require grad (a LoRA factor) and then gets dW from it too.
 */
export function matmulFixedOrderWeight(a: Tensor, weight: Tensor, transposeB: boolean): Tensor {
  const bits = weight.bfloat16;
  const { leading, rows, m, n, k } = fixedOrderLayout(a, weight, transposeB);
  const backend = getBackend();
  const shape = { m, n, k, transposeB };
  const output = allocate(m * n);
  if (bits) backend.matmulBfloat16({ a: a.data, b: bits, c: output, ...shape });
  else if (summedAsGemm(n, k))
    backend.matmulGemmOrder({ a: a.data, b: weight.data, c: output, ...shape });
  else backend.matmulFixedOrder({ a: a.data, b: weight.data, c: output, ...shape });
  const trainsWeight = !bits && weight.requiresGrad;
  const parents = trainsWeight ? [a, weight] : [a];
  const name = bits ? 'matmulBfloat16' : 'matmulFixedOrder';
  return createResult(output, [...leading, rows, n], name, parents, (gradOutput) => {
    if (a.requiresGrad)
      accumulateInputGradient(
        { backend, weight, bits, transposeB },
        gradOutput,
        gradientToWrite(a),
        {
          m,
          n: k,
          k: n,
        },
      );
    if (trainsWeight)
      accumulateWeightGradient(a.data, gradOutput, gradientToWrite(weight), m, n, k, transposeB);
  });
}

/**
 * Checks a [..., M, K] against a 2-D weight (a bfloat16 one frozen) and folds a's leading
 * dimensions into M.
 */
function fixedOrderLayout(
  a: Tensor,
  weight: Tensor,
  transposeB: boolean,
): { leading: number[]; rows: number; m: number; n: number; k: number } {
  if (a.bfloat16) {
    throw new ShapeError('matmul: only the second operand (a frozen weight) may be bfloat16');
  }
  if (a.rank < 2 || weight.rank !== 2) {
    throw new ShapeError(
      `matmul in fixed order needs a: [..., M, K] and a 2-D weight, got ${formatShape(a.shape)} and ${formatShape(weight.shape)}`,
    );
  }
  if (weight.bfloat16 && weight.requiresGrad && isGradientEnabled()) {
    throw new Error(
      `a bfloat16 weight ${formatShape(weight.shape)} cannot receive a gradient: bfloat16 is for frozen weights only`,
    );
  }
  const [rows, k] = a.shape.slice(-2) as [number, number];
  const [weightRows, weightColumns] = weight.shape as [number, number];
  const kWeight = transposeB ? weightColumns : weightRows;
  const n = transposeB ? weightRows : weightColumns;
  if (k !== kWeight) {
    throw new ShapeError(
      `matmul: inner dimensions differ: ${formatShape(a.shape)} × ${formatShape(weight.shape)}${transposeB ? 'ᵀ' : ''}`,
    );
  }
  const leading = a.shape.slice(0, -2);
  const m = shapeSize(leading) * rows;
  return { leading, rows, m, n, k };
}

/** The weight of one forward pass, as its backward pass needs it. */
interface ForwardWeight {
  backend: ReturnType<typeof getBackend>;
  weight: Tensor;
  /** The weight's bfloat16 bits when the forward pass read them, else null. */
  bits: Tensor['bfloat16'];
  transposeB: boolean;
}

/** The gradient a product writes, and whether it overwrites it (0) or adds to it (1). */
type ProductTarget = ReturnType<typeof gradientToWrite>;

/**
 * dA (+)= dC·op(W)ᵀ: the bfloat16 kernel for a bfloat16 W, else the ordinary product (no
 * sampled value depends on a gradient's summation order).
 */
function accumulateInputGradient(
  { backend, weight, bits, transposeB }: ForwardWeight,
  gradOutput: Float32Array,
  { gradient: gradInput, beta }: ProductTarget,
  shape: { m: number; n: number; k: number },
): void {
  if (bits) {
    backend.matmulBfloat16({
      a: gradOutput,
      b: bits,
      c: gradInput,
      ...shape,
      transposeB: !transposeB,
      beta,
    });
    return;
  }
  backend.matmul({
    a: gradOutput,
    b: weight.data,
    c: gradInput,
    batch: 1,
    ...shape,
    transposeA: false,
    transposeB: !transposeB,
    strideA: 0,
    strideB: 0,
    beta,
  });
}

/**
 * The layers of a model take matmulGemmOrder, the float32 GEMM kernels' own order, which keeps
 * the ordinary product's speed at every row count; narrower float32 weights (a LoRA adapter's
 * factors, one side the rank) stay on matmulFixedOrder, the kernel they were tuned on.
 */
const GEMM_ORDER_MIN_WIDTH = 64;

/**
 * Whether a float32 weight's products run in the GEMM order. It depends on the weight's shape
 * alone, never on M: a weight is summed one way whether a row is decoded or scored.
 */
function summedAsGemm(n: number, k: number): boolean {
  return n >= GEMM_ORDER_MIN_WIDTH && k >= GEMM_ORDER_MIN_WIDTH;
}

/** dW (+)= A [M, K] with dC [M, N]: dW [N, K] = dCᵀ·A (transposeB), else dW [K, N] = Aᵀ·dC. */
function accumulateWeightGradient(
  a: Float32Array,
  gradOutput: Float32Array,
  { gradient: gradWeight, beta }: ProductTarget,
  m: number,
  n: number,
  k: number,
  transposeB: boolean,
): void {
  const [left, right, rows, columns] = transposeB ? [gradOutput, a, n, k] : [a, gradOutput, k, n];
  getBackend().matmul({
    a: left,
    b: right,
    c: gradWeight,
    batch: 1,
    m: rows,
    n: columns,
    k: m,
    transposeA: true,
    transposeB: false,
    strideA: 0,
    strideB: 0,
    beta,
  });
}
