/**
 * Naive float64 forward computations, written straight from each kernel's definition and
 * independently of the TypeScript backend: the ground truth every backend is compared with,
 * and the functions the finite-difference checks differentiate.
 */
import type { AttentionShape } from '../types.js';

type Values = ArrayLike<number>;

export function matmul64(
  a: Values,
  b: Values,
  c: Values,
  shape: {
    batch: number;
    m: number;
    n: number;
    k: number;
    transposeA: boolean;
    transposeB: boolean;
    strideA: number;
    strideB: number;
    alpha: number;
    beta: number;
  },
): Float64Array {
  const { batch, m, n, k, transposeA, transposeB, strideA, strideB, alpha, beta } = shape;
  const result = new Float64Array(batch * m * n);
  for (let t = 0; t < batch; t++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let p = 0; p < k; p++) {
          const aValue = a[t * strideA + (transposeA ? p * m + i : i * k + p)];
          const bValue = b[t * strideB + (transposeB ? j * k + p : p * n + j)];
          sum += aValue * bValue;
        }
        const index = (t * m + i) * n + j;
        result[index] = alpha * sum + (beta === 0 ? 0 : beta * c[index]);
      }
    }
  }
  return result;
}

function logSumExp64(x: Values, start: number, columns: number): number {
  let maximum = -Infinity;
  for (let j = 0; j < columns; j++) maximum = Math.max(maximum, x[start + j]);
  let sum = 0;
  for (let j = 0; j < columns; j++) sum += Math.exp(x[start + j] - maximum);
  return maximum + Math.log(sum);
}

export function logSoftmax64(x: Values, rows: number, columns: number): Float64Array {
  const result = new Float64Array(rows * columns);
  for (let r = 0; r < rows; r++) {
    const lse = logSumExp64(x, r * columns, columns);
    for (let j = 0; j < columns; j++) result[r * columns + j] = x[r * columns + j] - lse;
  }
  return result;
}

export function softmax64(x: Values, rows: number, columns: number): Float64Array {
  return logSoftmax64(x, rows, columns).map(Math.exp);
}

export function gatherLogProbs64(
  logits: Values,
  targets: Values,
  rows: number,
  columns: number,
): { logProbs: Float64Array; entropy: Float64Array; logSumExp: Float64Array } {
  const logProbs = new Float64Array(rows);
  const entropy = new Float64Array(rows);
  const logSumExp = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const lse = logSumExp64(logits, r * columns, columns);
    logSumExp[r] = lse;
    logProbs[r] = logits[r * columns + targets[r]] - lse;
    let h = 0;
    for (let j = 0; j < columns; j++) {
      const logP = logits[r * columns + j] - lse;
      if (Math.exp(logP) > 0) h -= Math.exp(logP) * logP;
    }
    entropy[r] = h;
  }
  return { logProbs, entropy, logSumExp };
}

export function rmsNorm64(
  x: Values,
  weight: Values,
  rows: number,
  columns: number,
  epsilon: number,
): Float64Array {
  const result = new Float64Array(rows * columns);
  for (let r = 0; r < rows; r++) {
    let meanSquare = 0;
    for (let j = 0; j < columns; j++) meanSquare += x[r * columns + j] ** 2 / columns;
    const scale = 1 / Math.sqrt(meanSquare + epsilon);
    for (let j = 0; j < columns; j++)
      result[r * columns + j] = x[r * columns + j] * scale * weight[j];
  }
  return result;
}

export function layerNorm64(
  x: Values,
  weight: Values,
  bias: Values | null,
  rows: number,
  columns: number,
  epsilon: number,
): Float64Array {
  const result = new Float64Array(rows * columns);
  for (let r = 0; r < rows; r++) {
    let mean = 0;
    for (let j = 0; j < columns; j++) mean += x[r * columns + j] / columns;
    let variance = 0;
    for (let j = 0; j < columns; j++) variance += (x[r * columns + j] - mean) ** 2 / columns;
    const scale = 1 / Math.sqrt(variance + epsilon);
    for (let j = 0; j < columns; j++) {
      const normalized = (x[r * columns + j] - mean) * scale;
      result[r * columns + j] = normalized * weight[j] + (bias ? bias[j] : 0);
    }
  }
  return result;
}

export function rope64(
  data: Values,
  positions: Values,
  shape: { batch: number; length: number; heads: number; headDim: number; theta: number },
  inverse: boolean,
): Float64Array {
  const { batch, length, heads, headDim, theta } = shape;
  const result = Float64Array.from(data);
  const half = headDim / 2;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < length; t++) {
      for (let h = 0; h < heads; h++) {
        const start = ((b * length + t) * heads + h) * headDim;
        for (let i = 0; i < half; i++) {
          const angle =
            (inverse ? -1 : 1) * positions[b * length + t] * theta ** ((-2 * i) / headDim);
          const x1 = data[start + i];
          const x2 = data[start + half + i];
          result[start + i] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
          result[start + half + i] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
        }
      }
    }
  }
  return result;
}

/** Attention from the definition; returns the output and the [B, H, Lq, Lk] probabilities. */
export function attention64(
  shape: AttentionShape,
  query: Values,
  key: Values,
  value: Values,
): { output: Float64Array; probabilities: Float64Array } {
  const { batch, queryLength, keyLength, keyCapacity, heads, kvHeads, headDim } = shape;
  const output = new Float64Array(batch * queryLength * heads * headDim);
  const probabilities = new Float64Array(batch * heads * queryLength * keyLength);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      const kvHead = Math.floor((h * kvHeads) / heads);
      for (let i = 0; i < queryLength; i++) {
        const queryAt = ((b * queryLength + i) * heads + h) * headDim;
        const keyAt = (j: number): number => ((b * keyCapacity + j) * kvHeads + kvHead) * headDim;
        const valid: number[] = [];
        for (let j = 0; j < keyLength && j <= shape.queryStart + i; j++) {
          if (!shape.keyMask || shape.keyMask[b * keyCapacity + j] !== 0) valid.push(j);
        }
        if (valid.length === 0) continue;
        const scores = valid.map((j) => {
          let dot = 0;
          for (let d = 0; d < headDim; d++) dot += query[queryAt + d] * key[keyAt(j) + d];
          return dot * shape.scale;
        });
        const maximum = Math.max(...scores);
        const exponentials = scores.map((score) => Math.exp(score - maximum));
        const total = exponentials.reduce((sum, e) => sum + e, 0);
        valid.forEach((j, index) => {
          const p = exponentials[index] / total;
          probabilities[((b * heads + h) * queryLength + i) * keyLength + j] = p;
          for (let d = 0; d < headDim; d++) output[queryAt + d] += p * value[keyAt(j) + d];
        });
      }
    }
  }
  return { output, probabilities };
}

export function swiglu64(gate: number, up: number): number {
  return (gate / (1 + Math.exp(-gate))) * up;
}

export function gelu64(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}
