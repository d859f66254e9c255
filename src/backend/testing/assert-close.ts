import assert from 'node:assert/strict';

export interface Tolerance {
  /** Allowed |actual − expected| relative to |expected|. */
  relative: number;
  /** Allowed |actual − expected| relative to the root mean square of `expected`. */
  relativeToScale?: number;
  /** Allowed absolute difference. */
  absolute?: number;
}

function rootMeanSquare(values: ArrayLike<number>): number {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    if (Number.isFinite(values[i])) {
      sum += values[i] * values[i];
      count++;
    }
  }
  return count === 0 ? 0 : Math.sqrt(sum / count);
}

/**
 * Element-wise |actual − expected| ≤ relative·|expected| + relativeToScale·rms(expected) +
 * absolute. NaN must meet NaN and ±∞ must meet the same ∞. Reports the worst element.
 */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  tolerance: Tolerance,
  label: string,
): void {
  assert.equal(actual.length, expected.length, `${label}: length`);
  const scale = rootMeanSquare(expected) * (tolerance.relativeToScale ?? tolerance.relative);
  const absolute = (tolerance.absolute ?? 0) + scale;
  let worstIndex = -1;
  let worstExcess = 0;
  for (let i = 0; i < expected.length; i++) {
    const want = expected[i];
    const got = actual[i];
    if (Number.isNaN(want) || Number.isNaN(got)) {
      assert.ok(
        Number.isNaN(want) && Number.isNaN(got),
        `${label}[${i}]: got ${got}, want ${want}`,
      );
      continue;
    }
    if (!Number.isFinite(want) || !Number.isFinite(got)) {
      assert.equal(got, want, `${label}[${i}]`);
      continue;
    }
    const excess = Math.abs(got - want) - (tolerance.relative * Math.abs(want) + absolute);
    if (excess > worstExcess) {
      worstExcess = excess;
      worstIndex = i;
    }
  }
  if (worstIndex >= 0) {
    assert.fail(
      `${label}[${worstIndex}]: got ${actual[worstIndex]}, want ${expected[worstIndex]} ` +
        `(tolerance relative ${tolerance.relative}, absolute ${absolute.toExponential(2)})`,
    );
  }
}
