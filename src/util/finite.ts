/** Where a list of numbers first holds NaN or ±Infinity. */
export interface NonFiniteValue {
  /** The array's name (a weight's, an optimizer moment's). */
  name: string;
  index: number;
  value: number;
}

/**
 * Index of the first NaN or ±Infinity in `data`, or -1. x − x is 0 for every finite x and NaN
 * otherwise: one subtraction per element, and a search only when something is off.
 */
export function firstNonFinite(data: ArrayLike<number>): number {
  let check = 0;
  for (let index = 0; index < data.length; index++) check += data[index]! - data[index]!;
  if (check === 0) return -1;
  for (let index = 0; index < data.length; index++)
    if (!Number.isFinite(data[index]!)) return index;
  return -1;
}

/** The first of `arrays` holding a non-finite value, in order, or null when all are finite. */
export function firstNonFiniteValue(
  arrays: Iterable<{ name: string; data: ArrayLike<number> }>,
): NonFiniteValue | null {
  for (const { name, data } of arrays) {
    const index = firstNonFinite(data);
    if (index >= 0) return { name, index, value: data[index]! };
  }
  return null;
}

/**
 * Index of the first NaN or ±Infinity among bfloat16 bit patterns (the exponent's 8 bits all
 * ones), or -1: read in place, where widening a frozen weight to float32 to check it allocated
 * twice its bytes anew on every check.
 */
export function firstNonFiniteBfloat16(bits: Uint16Array): number {
  for (let index = 0; index < bits.length; index++)
    if ((bits[index]! & 0x7f80) === 0x7f80) return index;
  return -1;
}

/** The value of one bfloat16 bit pattern (the upper half of a float32's). */
export function bfloat16Value(bits: number): number {
  return new Float32Array(Uint32Array.of(bits << 16).buffer)[0]!;
}
