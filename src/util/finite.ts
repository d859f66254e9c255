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
