/**
 * Run-level diagnostics of docs/method.md §5: how the per-update KL sits against δ, whether the
 * certificate ranks updates like the measured improvement does, and which stages regressed.
 */
import { ShapeError, TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';

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

/**
 * Whether a stage regressed: its team reward, measured on the same prompts before and after the
 * stage (a paired change with its standard error), fell by more than `zThreshold` standard
 * errors. A change without noise (standard error 0) is never flagged.
 */
export function stageRegressed({
  improvement,
  standardError,
  zThreshold = 2,
}: {
  /** Paired change of the mean team reward over the stage. */
  improvement: number;
  standardError: number;
  /** @default 2 */
  zThreshold?: number;
}): boolean {
  return standardError > 0 && improvement < -zThreshold * standardError;
}

/**
 * Slack in the trust-region test kl ≤ δ: the KL measured after a backtracked step can exceed δ
 * by rounding alone. An update is in region when kl ≤ δ + inRegionTolerance.
 */
export const inRegionTolerance = 1e-9;

/**
 * Fraction of updates whose final token-level KL exceeds its δ (δ may differ per agent: pass one
 * per update, or one for all).
 */
export function outOfRegionRate({
  updateKl,
  delta,
  tolerance = 0,
}: {
  /** [updates] final token-level KL of each update. */
  updateKl: NumberArray;
  /** δ for all updates, or [updates]. */
  delta: number | NumberArray;
  /** Counted out of region only above δ + tolerance (see inRegionTolerance). @default 0 */
  tolerance?: number;
}): { rate: number; outOfRegionCount: number; count: number } {
  if (typeof delta !== 'number' && delta.length !== updateKl.length) {
    throw new ShapeError(
      `outOfRegionRate: ${updateKl.length} KL values but ${delta.length} deltas`,
    );
  }
  let outOfRegionCount = 0;
  for (let index = 0; index < updateKl.length; index++) {
    const bound = typeof delta === 'number' ? delta : delta[index];
    if (updateKl[index] > bound + tolerance) outOfRegionCount++;
  }
  const count = updateKl.length;
  return { rate: count > 0 ? outOfRegionCount / count : Number.NaN, outOfRegionCount, count };
}

export interface KlHistogram {
  /** [bins + 1] equal-width bin edges from 0 to `upper`. */
  edges: number[];
  /** [bins]; bin b holds edges[b] ≤ v < edges[b+1], the last bin also v = upper. */
  counts: number[];
  /** Values above `upper` (including +∞). */
  overflowCount: number;
  /** NaN values (not binned). */
  nonFiniteCount: number;
  /** v ≤ δ. */
  inRegionCount: number;
  /** v > δ. */
  outOfRegionCount: number;
  delta: number;
  upper: number;
}

/**
 * Histogram of per-update KL values against δ, for the paper's KL-histogram figure. Bins span
 * [0, upper] with upper = max(2δ, largest finite value) unless given.
 */
export function klHistogram({
  values,
  delta,
  bins = 20,
  upper,
}: {
  values: NumberArray;
  delta: number;
  /** @default 20 */
  bins?: number;
  upper?: number;
}): KlHistogram {
  if (!Number.isInteger(bins) || bins < 1) {
    throw new TeamtrError(`klHistogram: bins must be a positive integer, got ${bins}`);
  }
  if (!(delta > 0)) throw new TeamtrError(`klHistogram: delta must be > 0, got ${delta}`);
  let largest = 0;
  for (let index = 0; index < values.length; index++) {
    if (Number.isFinite(values[index])) largest = Math.max(largest, values[index]);
  }
  const top = upper ?? Math.max(2 * delta, largest);
  const edges = Array.from({ length: bins + 1 }, (_, index) => (top * index) / bins);
  const counts = new Array<number>(bins).fill(0);
  const histogram = { overflowCount: 0, nonFiniteCount: 0, inRegionCount: 0, outOfRegionCount: 0 };
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    if (Number.isNaN(value)) {
      histogram.nonFiniteCount++;
      continue;
    }
    if (value <= delta) histogram.inRegionCount++;
    else histogram.outOfRegionCount++;
    if (value > top) histogram.overflowCount++;
    else counts[Math.min(bins - 1, Math.max(0, Math.floor((value / top) * bins)))]++;
  }
  return { edges, counts, ...histogram, delta, upper: top };
}
