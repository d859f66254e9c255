import type {
  MatmulBfloat16Arguments,
  MatmulFixedOrderArguments,
  MatmulGemmOrderArguments,
} from '../types.js';
import { widenBfloat16 } from '../bfloat16.js';
import { matmul } from './matmul.js';

/**
 * C = alpha·A·op(B) + beta·C with B in bfloat16: the float32 reference product on B's widened
 * values (exact), so this is correct by construction and the native kernel is tested against it.
 */
export function matmulBfloat16(args: MatmulBfloat16Arguments): void {
  const { b, n, k } = args;
  matmulFixedOrder({ ...args, b: widenBfloat16(b.subarray(0, n * k)) });
}

/** C = alpha·A·op(B) + beta·C with B float32: the reference product (its order is the engine's). */
export function matmulFixedOrder(args: MatmulFixedOrderArguments): void {
  const { a, b, c, m, n, k, transposeB } = args;
  matmul({
    a,
    b,
    c,
    batch: 1,
    m,
    n,
    k,
    transposeA: false,
    transposeB,
    strideA: 0,
    strideB: 0,
    alpha: args.alpha ?? 1,
    beta: args.beta ?? 0,
  });
}

/**
 * C = A·op(B): the reference product. Its float64 sums already give a row the same value at any
 * row count; the native kernel's float32 GEMM order is tested against it within rounding.
 */
export function matmulGemmOrder(args: MatmulGemmOrderArguments): void {
  matmulFixedOrder(args);
}
