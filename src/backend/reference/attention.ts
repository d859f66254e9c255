import type {
  AttentionBackwardArguments,
  AttentionForwardArguments,
  AttentionShape,
} from '../types.js';

/**
 * Causal grouped-query attention, one (batch, head, query) row at a time, straight from the
 * definition: scores = scale·q·kᵀ over the valid keys, softmax, output = Σ p_j·v_j.
 * Valid keys of query i: slot j ≤ queryStart + i, j < keyLength, keyMask[b, j] ≠ 0.
 */

interface RowLayout {
  /** Offset of the query row (and output row) in q/output. */
  queryOffset: number;
  /** Offset of key slot 0 of this row's kv head in k/v; slot j adds j·keyStride. */
  keyOffset: number;
  keyStride: number;
  /** Offset of the row in the probabilities array. */
  probabilityOffset: number;
  /** Keys 0..lastKey (inclusive) are causally visible. */
  lastKey: number;
}

function rowLayout(shape: AttentionShape, b: number, h: number, i: number): RowLayout {
  const { queryLength, keyLength, keyCapacity, heads, kvHeads, headDim, queryStart } = shape;
  const kvHead = Math.floor(h / (heads / kvHeads));
  return {
    queryOffset: ((b * queryLength + i) * heads + h) * headDim,
    keyOffset: (b * keyCapacity * kvHeads + kvHead) * headDim,
    keyStride: kvHeads * headDim,
    probabilityOffset: ((b * heads + h) * queryLength + i) * keyLength,
    lastKey: Math.min(queryStart + i, keyLength - 1),
  };
}

function isValidKey(shape: AttentionShape, b: number, j: number): boolean {
  return shape.keyMask === null || shape.keyMask[b * shape.keyCapacity + j] !== 0;
}

function forEachRow(shape: AttentionShape, visit: (b: number, h: number, i: number) => void): void {
  for (let b = 0; b < shape.batch; b++) {
    for (let h = 0; h < shape.heads; h++) {
      for (let i = 0; i < shape.queryLength; i++) visit(b, h, i);
    }
  }
}

/** Fills `probabilities` (length keyLength) for one query row; returns false if no key is valid. */
function rowProbabilities(
  args: AttentionForwardArguments | AttentionBackwardArguments,
  b: number,
  layout: RowLayout,
  probabilities: Float64Array,
): boolean {
  const { query, key, headDim, scale } = args;
  probabilities.fill(0);
  let maximum = -Infinity;
  let anyValid = false;
  const scores = probabilities;
  for (let j = 0; j <= layout.lastKey; j++) {
    if (!isValidKey(args, b, j)) continue;
    const keyStart = layout.keyOffset + j * layout.keyStride;
    let dot = 0;
    for (let d = 0; d < headDim; d++) dot += query[layout.queryOffset + d] * key[keyStart + d];
    scores[j] = scale * dot;
    if (!anyValid || scores[j] > maximum) maximum = scores[j];
    anyValid = true;
  }
  if (!anyValid) return false;
  let sum = 0;
  for (let j = 0; j <= layout.lastKey; j++) {
    if (!isValidKey(args, b, j)) continue;
    scores[j] = Math.exp(scores[j] - maximum);
    sum += scores[j];
  }
  for (let j = 0; j <= layout.lastKey; j++) probabilities[j] /= sum;
  return true;
}

export function attention(args: AttentionForwardArguments): void {
  const { value, output, headDim, keyLength, probabilities } = args;
  const row = new Float64Array(keyLength);
  forEachRow(args, (b, h, i) => {
    const layout = rowLayout(args, b, h, i);
    const anyValid = rowProbabilities(args, b, layout, row);
    if (probabilities) {
      for (let j = 0; j < keyLength; j++) probabilities[layout.probabilityOffset + j] = row[j];
    }
    for (let d = 0; d < headDim; d++) {
      let sum = 0;
      if (anyValid) {
        for (let j = 0; j <= layout.lastKey; j++) {
          if (row[j] !== 0) sum += row[j] * value[layout.keyOffset + j * layout.keyStride + d];
        }
      }
      output[layout.queryOffset + d] = sum;
    }
  });
}

/**
 * With P the saved probabilities and dO the output gradient, per query row:
 * dP_j = dO·v_j, dS_j = P_j·(dP_j − Σ_l P_l·dP_l), and
 * dq += scale·Σ_j dS_j·k_j, dk_j += scale·dS_j·q, dv_j += P_j·dO.
 * Masked and future keys have P_j = 0, so they receive no gradient.
 */
export function attentionBackward(args: AttentionBackwardArguments): void {
  const { query, key, value, probabilities, gradOutput, gradQuery, gradKey, gradValue } = args;
  const { headDim, keyLength, scale } = args;
  const gradScores = new Float64Array(keyLength);
  forEachRow(args, (b, h, i) => {
    const layout = rowLayout(args, b, h, i);
    const q = layout.queryOffset;
    let weightedSum = 0;
    for (let j = 0; j <= layout.lastKey; j++) {
      const probability = probabilities[layout.probabilityOffset + j];
      if (probability === 0) continue;
      const valueStart = layout.keyOffset + j * layout.keyStride;
      let dot = 0;
      for (let d = 0; d < headDim; d++) dot += gradOutput[q + d] * value[valueStart + d];
      gradScores[j] = dot;
      weightedSum += probability * dot;
    }
    for (let j = 0; j <= layout.lastKey; j++) {
      const probability = probabilities[layout.probabilityOffset + j];
      if (probability === 0) continue;
      const gradScore = scale * probability * (gradScores[j] - weightedSum);
      const keyStart = layout.keyOffset + j * layout.keyStride;
      for (let d = 0; d < headDim; d++) {
        gradQuery[q + d] += gradScore * key[keyStart + d];
        gradKey[keyStart + d] += gradScore * query[q + d];
        gradValue[keyStart + d] += probability * gradOutput[q + d];
      }
    }
  });
}
