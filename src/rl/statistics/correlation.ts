/**
 * How two paired samples move together: Spearman's rank correlation (ties handled exactly) and
 * the ordinary least-squares line (the power-law fits of the scaling experiments are lines on
 * log-log axes).
 */
import { ShapeError, TeamtrError } from '../../util/errors.js';
import type { NumberArray } from '../layout.js';
import { mean } from './descriptive.js';

/** 1-based ranks, ties sharing the mean of the ranks they span. */
export function averageRanks(values: NumberArray): Float64Array {
  const order = Array.from({ length: values.length }, (_, index) => index).sort(
    (a, b) => values[a] - values[b],
  );
  const ranks = new Float64Array(values.length);
  let start = 0;
  while (start < order.length) {
    let end = start;
    while (end + 1 < order.length && values[order[end + 1]] === values[order[start]]) end++;
    const averageRank = (start + end) / 2 + 1;
    for (let index = start; index <= end; index++) ranks[order[index]] = averageRank;
    start = end + 1;
  }
  return ranks;
}

/**
 * Spearman's rank correlation: the Pearson correlation of the average ranks (so ties are handled
 * exactly). NaN when there are fewer than two points or either side is constant (undefined).
 */
export function rankCorrelation({ x, y }: { x: NumberArray; y: NumberArray }): number {
  if (x.length !== y.length) {
    throw new ShapeError(`rankCorrelation: x has ${x.length} values but y has ${y.length}`);
  }
  for (let index = 0; index < x.length; index++) {
    if (Number.isNaN(x[index]) || Number.isNaN(y[index])) {
      throw new TeamtrError(`rankCorrelation: NaN at index ${index}; drop undefined points first`);
    }
  }
  if (x.length < 2) return Number.NaN;
  return pearson(averageRanks(x), averageRanks(y));
}

function pearson(x: Float64Array, y: Float64Array): number {
  const count = x.length;
  let meanX = 0;
  let meanY = 0;
  // Sum first, then divide: for constant input the mean is then exact and both variances are 0.
  for (let index = 0; index < count; index++) {
    meanX += x[index];
    meanY += y[index];
  }
  meanX /= count;
  meanY /= count;
  let covariance = 0;
  let varianceX = 0;
  let varianceY = 0;
  for (let index = 0; index < count; index++) {
    covariance += (x[index] - meanX) * (y[index] - meanY);
    varianceX += (x[index] - meanX) ** 2;
    varianceY += (y[index] - meanY) ** 2;
  }
  if (varianceX === 0 || varianceY === 0) return Number.NaN;
  return covariance / Math.sqrt(varianceX * varianceY);
}

/** y ≈ intercept + slope·x. */
export interface LineFit {
  readonly slope: number;
  readonly intercept: number;
}

/** The least-squares line through paired points; RangeError below two distinct x values. */
export function leastSquaresLine(xs: readonly number[], ys: readonly number[]): LineFit {
  if (xs.length !== ys.length || xs.length < 2) {
    throw new RangeError(
      `a line needs at least two paired points, got ${xs.length} and ${ys.length}`,
    );
  }
  const meanX = mean(xs);
  const meanY = mean(ys);
  let covariance = 0;
  let variance = 0;
  for (let index = 0; index < xs.length; index++) {
    covariance += (xs[index]! - meanX) * (ys[index]! - meanY);
    variance += (xs[index]! - meanX) ** 2;
  }
  if (variance === 0) throw new RangeError('a line needs at least two distinct x values');
  const slope = covariance / variance;
  return { slope, intercept: meanY - slope * meanX };
}
