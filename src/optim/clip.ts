import { getBackend } from '../backend/index.js';
import type { NamedParameter } from '../nn/module.js';

/**
 * Global gradient norm over every parameter that has a gradient, and the factor that brings
 * it down to `maximumNorm` (1 when already below). Pass the factor to AdamW.update as
 * `gradientScale`: clipping then costs no extra pass over the gradients.
 */
export function clipGradientNorm(
  parameters: readonly NamedParameter[],
  maximumNorm: number,
): { norm: number; scale: number } {
  const backend = getBackend();
  let sumOfSquares = 0;
  for (const { tensor } of parameters)
    if (tensor.grad) sumOfSquares += backend.sumOfSquares({ input: tensor.grad });
  const norm = Math.sqrt(sumOfSquares);
  const scale =
    Number.isFinite(norm) && norm > maximumNorm && maximumNorm > 0 ? maximumNorm / norm : 1;
  return { norm, scale };
}
