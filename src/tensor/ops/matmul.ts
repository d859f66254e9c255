import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientToWrite, shapeSize, Tensor } from '../tensor.js';
import { matmulFixedOrderWeight } from './matmul-bfloat16.js';

export interface MatmulOptions {
  /** Use Aᵀ: a is stored [..., K, M]. @default false */
  transposeA?: boolean;
  /** Use Bᵀ: b is stored [..., N, K] (a Linear weight [out, in]). @default false */
  transposeB?: boolean;
  /**
   * Sum every entry of C in one order whatever M is (b a 2-D weight, A untransposed): for
   * weights whose rows must come out the same decoded alone as scored with their sequence
   * (see matmul-bfloat16.ts). A bfloat16 b always does. @default false
   */
  fixedOrder?: boolean;
}

/**
 * C = op(A)·op(B). a: [..., M, K]; b: [K, N] (shared by every batch) or [..., K, N] with the
 * same leading dimensions as a. When b is shared and A is not transposed, the leading
 * dimensions fold into M and the whole product is one sgemm call. A b stored in bfloat16 (a
 * frozen weight) takes the bfloat16 kernel, and `fixedOrder` its float32 twin (see
 * matmul-bfloat16.ts; A not transposed).
 */
export function matmul(a: Tensor, b: Tensor, options: MatmulOptions = {}): Tensor {
  const transposeA = options.transposeA ?? false;
  const transposeB = options.transposeB ?? false;
  if (b.bfloat16 || options.fixedOrder) {
    if (transposeA) throw new ShapeError('matmul: a fixed-order weight takes A untransposed');
    return matmulFixedOrderWeight(a, b, transposeB);
  }
  if (a.bfloat16) throw new ShapeError('matmul: only the second operand may be bfloat16');
  const layout = matmulLayout(a, b, transposeA, transposeB);
  const { batchShape, batch, m, n, k, sharedB, folded } = layout;
  const backend = getBackend();
  const output = allocate(batch * m * n);
  backend.matmul({
    a: a.data,
    b: b.data,
    c: output,
    batch: folded ? 1 : batch,
    m: folded ? batch * m : m,
    n,
    k,
    transposeA,
    transposeB,
    strideA: m * k,
    strideB: sharedB ? 0 : k * n,
  });
  return createResult(output, [...batchShape, m, n], 'matmul', [a, b], (gradOutput) => {
    if (a.requiresGrad)
      accumulateGradientOfA(backend, gradientToWrite(a), gradOutput, b.data, layout);
    if (b.requiresGrad)
      accumulateGradientOfAnyB(backend, a.data, gradOutput, gradientToWrite(b), layout);
  });
}

/** The dimensions of C = op(A)·op(B): op(A) [M, K] and op(B) [K, N] for each of `batch` items. */
interface MatmulLayout {
  batchShape: number[];
  batch: number;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  /** b is 2-D, one matrix for every batch item. */
  sharedB: boolean;
  /** Shared B and A untransposed: the batch folds into M, one product of [batch·M, K]. */
  folded: boolean;
}

/** Reads M, K, N and the batch from the operands' shapes, checking that they agree. */
function matmulLayout(
  a: Tensor,
  b: Tensor,
  transposeA: boolean,
  transposeB: boolean,
): MatmulLayout {
  if (a.rank < 2 || b.rank < 2) {
    throw new ShapeError(
      `matmul needs rank ≥ 2, got ${formatShape(a.shape)} and ${formatShape(b.shape)}`,
    );
  }
  const [rowsA, columnsA] = a.shape.slice(-2) as [number, number];
  const [rowsB, columnsB] = b.shape.slice(-2) as [number, number];
  const m = transposeA ? columnsA : rowsA;
  const k = transposeA ? rowsA : columnsA;
  const kB = transposeB ? columnsB : rowsB;
  const n = transposeB ? rowsB : columnsB;
  const batchShape = a.shape.slice(0, -2);
  const batch = shapeSize(batchShape);
  const sharedB = b.rank === 2;
  if (k !== kB) {
    throw new ShapeError(
      `matmul: inner dimensions differ: ${formatShape(a.shape)}${transposeA ? 'ᵀ' : ''} × ${formatShape(b.shape)}${transposeB ? 'ᵀ' : ''}`,
    );
  }
  if (
    !sharedB &&
    (b.rank !== a.rank ||
      b.shape.slice(0, -2).some((dimension, index) => dimension !== batchShape[index]))
  ) {
    throw new ShapeError(
      `matmul: batch dimensions of ${formatShape(a.shape)} and ${formatShape(b.shape)} differ`,
    );
  }
  const folded = sharedB && !transposeA;
  return { batchShape, batch, m, n, k, transposeA, transposeB, sharedB, folded };
}

/** gradA (+)= ∂L/∂A of C = op(A)·op(B), given dC (`beta` 0 overwrites gradA, 1 adds to it). */
function accumulateGradientOfA(
  backend: Backend,
  { gradient: gradA, beta }: ProductTarget,
  gradOutput: Float32Array,
  b: Float32Array,
  { batch, m, n, k, transposeA, transposeB, sharedB, folded }: MatmulLayout,
): void {
  if (!transposeA) {
    // dA = dC · op(B)ᵀ
    backend.matmul({
      a: gradOutput,
      b,
      c: gradA,
      batch: folded ? 1 : batch,
      m: folded ? batch * m : m,
      n: k,
      k: n,
      transposeA: false,
      transposeB: !transposeB,
      strideA: m * n,
      strideB: sharedB ? 0 : k * n,
      beta,
    });
  } else {
    // A stored [K, M]: dA = op(B) · dCᵀ
    backend.matmul({
      a: b,
      b: gradOutput,
      c: gradA,
      batch,
      m: k,
      n: m,
      k: n,
      transposeA: transposeB,
      transposeB: true,
      strideA: sharedB ? 0 : k * n,
      strideB: m * n,
      beta,
    });
  }
}

/** gradB (+)= ∂L/∂B of C = op(A)·op(B), given dC, for a batched or a shared B. */
function accumulateGradientOfAnyB(
  backend: Backend,
  a: Float32Array,
  gradOutput: Float32Array,
  { gradient: gradB, beta }: ProductTarget,
  { batch, m, n, k, transposeA, transposeB, sharedB }: MatmulLayout,
): void {
  const shape = { n, k, transposeA, transposeB };
  if (!sharedB) {
    accumulateGradientOfB(backend, a, gradOutput, gradB, { ...shape, batch, m, beta });
  } else if (!transposeA) {
    // Shared B, A folded to [batch·M, K]: one product.
    accumulateGradientOfB(backend, a, gradOutput, gradB, {
      ...shape,
      batch: 1,
      m: batch * m,
      beta,
    });
  } else {
    // One product per item into the same gradB: only the first may overwrite it.
    for (let index = 0; index < batch; index++) {
      accumulateGradientOfB(
        backend,
        a.subarray(index * m * k, (index + 1) * m * k),
        gradOutput.subarray(index * m * n, (index + 1) * m * n),
        gradB,
        { ...shape, batch: 1, m, beta: index === 0 ? beta : 1 },
      );
    }
  }
}

type Backend = ReturnType<typeof getBackend>;
type ProductTarget = ReturnType<typeof gradientToWrite>;

/**
 * gradB (+)= ∂L/∂B of C = op(A)·op(B) for `batch` items of op(A) [M, K] (stride M·K in `a`), dC
 * [M, N] (stride M·N) and B (stride K·N in gradB); `beta` 0 overwrites gradB, 1 adds to it. A
 * shared B takes batch 1: A folded to [batch·M, K], or one item at a time when A is transposed.
 */
function accumulateGradientOfB(
  backend: Backend,
  a: Float32Array,
  gradOutput: Float32Array,
  gradB: Float32Array,
  {
    batch,
    m,
    n,
    k,
    transposeA,
    transposeB,
    beta,
  }: Pick<MatmulLayout, 'batch' | 'm' | 'n' | 'k' | 'transposeA' | 'transposeB'> & { beta: 0 | 1 },
): void {
  if (!transposeB) {
    // dB [K, N] = op(A)ᵀ · dC
    backend.matmul({
      a,
      b: gradOutput,
      c: gradB,
      batch,
      m: k,
      n,
      k: m,
      transposeA: !transposeA,
      transposeB: false,
      strideA: m * k,
      strideB: m * n,
      beta,
    });
  } else {
    // B stored [N, K]: dB = dCᵀ · op(A)
    backend.matmul({
      a: gradOutput,
      b: a,
      c: gradB,
      batch,
      m: n,
      n: k,
      k: m,
      transposeA: true,
      transposeB: transposeA,
      strideA: m * n,
      strideB: m * k,
      beta,
    });
  }
}
