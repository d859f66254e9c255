/**
 * The unit of exchange between the file layer and the model layer: a named, row-major float32
 * array and its shape. The file layer knows nothing of tensors; the model layer converts.
 */
export interface NamedArray {
  name: string;
  /** Dimensions, outermost first (row-major, as in safetensors). `[]` is a scalar. */
  shape: number[];
  data: Float32Array;
}

/**
 * The number of elements a shape holds, or null if the product is not a safe integer (a
 * hostile header can claim `[2^40, 2^40]`; multiplying blindly would lose precision).
 */
export function shapeElementCount(shape: readonly number[]): number | null {
  if (shape.includes(0)) return 0;
  let count = 1;
  for (const dimension of shape) {
    count *= dimension;
    if (!Number.isSafeInteger(count)) return null;
  }
  return count;
}

/** `[2, 3]` → `"[2, 3]"`, for messages. */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}
