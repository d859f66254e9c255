import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import {
  createResult,
  formatShape,
  gradientOf,
  isGradientEnabled,
  shapeSize,
  type Tensor,
} from '../tensor.js';

/**
 * C = A·op(W) for a frozen weight W stored in bfloat16 (`Tensor.storeAsBfloat16`): a: [..., M, K];
 * w: [K, N], or [N, K] with transposeB (a Linear weight [out, in]). The leading dimensions of a
 * fold into M, so the whole product is one kernel call whose rows are summed in one fixed order
 * whatever M is (see `matmulBfloat16` in backend/types.ts): a token's logits come out with the
 * same bits when decoded alone as when scored with the rest of its sequence.
 *
 * The gradient flows to A only (dA = dC·op(W)ᵀ, the same kernel on the other layout of W): W is
 * frozen, which is what lets a LoRA adapter on a bfloat16 base still train the layers below it.
 */
export function matmulBfloat16Weight(a: Tensor, weight: Tensor, transposeB: boolean): Tensor {
  const bits = weight.bfloat16!;
  if (a.bfloat16) {
    throw new ShapeError('matmul: only the second operand (a frozen weight) may be bfloat16');
  }
  if (a.rank < 2 || weight.rank !== 2) {
    throw new ShapeError(
      `matmul with a bfloat16 weight needs a: [..., M, K] and a 2-D weight, got ${formatShape(a.shape)} and ${formatShape(weight.shape)}`,
    );
  }
  if (weight.requiresGrad && isGradientEnabled()) {
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
  const backend = getBackend();
  const output = allocate(m * n);
  backend.matmulBfloat16({ a: a.data, b: bits, c: output, m, n, k, transposeB });
  return createResult(output, [...leading, rows, n], 'matmulBfloat16', [a], (gradOutput) => {
    backend.matmulBfloat16({
      a: gradOutput,
      b: bits,
      c: gradientOf(a),
      m,
      n: k,
      k: n,
      transposeB: !transposeB,
      beta: 1,
    });
  });
}
