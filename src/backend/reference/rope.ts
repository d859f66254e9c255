import type { KernelArguments } from '../types.js';

/**
 * Rotary position embedding, Hugging Face "rotate_half" convention: within each head, entry i
 * pairs with entry i + D/2 and the pair is rotated by angle position·θ^(−2i/D). Angles are
 * computed in float64 once per (batch, position) and reused across heads. `source` may be
 * `data` (each pair is read before it is written).
 */
export function rope(args: KernelArguments<'rope'>): void {
  const { data, source, positions, batch, length, heads, headDim, theta, inverse } = args;
  const half = headDim >> 1;
  const inverseFrequencies = new Float64Array(half);
  for (let i = 0; i < half; i++) inverseFrequencies[i] = 1 / Math.pow(theta, (2 * i) / headDim);
  const cosines = new Float64Array(half);
  const sines = new Float64Array(half);
  const direction = inverse ? -1 : 1;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < length; t++) {
      const position = positions[b * length + t];
      for (let i = 0; i < half; i++) {
        const angle = position * inverseFrequencies[i];
        cosines[i] = Math.cos(angle);
        sines[i] = direction * Math.sin(angle);
      }
      for (let h = 0; h < heads; h++) {
        const start = ((b * length + t) * heads + h) * headDim;
        for (let i = 0; i < half; i++) {
          const first = source[start + i];
          const second = source[start + half + i];
          data[start + i] = first * cosines[i] - second * sines[i];
          data[start + half + i] = second * cosines[i] + first * sines[i];
        }
      }
    }
  }
}
