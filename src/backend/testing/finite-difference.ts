/**
 * Central finite differences of a float64 scalar function: the independent check of every
 * backward kernel. With float64 forwards and step 1e-6 the truncation and rounding errors are
 * around 1e-9, far below the float32 tolerance the backends are held to.
 */
export function finiteDifferenceGradient(
  loss: (values: Float64Array) => number,
  at: ArrayLike<number>,
  step = 1e-6,
): Float64Array {
  const point = Float64Array.from(at);
  const gradient = new Float64Array(point.length);
  for (let i = 0; i < point.length; i++) {
    const original = point[i];
    point[i] = original + step;
    const above = loss(point);
    point[i] = original - step;
    const below = loss(point);
    point[i] = original;
    gradient[i] = (above - below) / (2 * step);
  }
  return gradient;
}

/** Σ weights·values: turns a vector-valued forward into the scalar loss whose gradient is tested. */
export function weightedSum(values: ArrayLike<number>, weights: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i] * weights[i];
  return sum;
}
