/**
 * Run-level diagnostics of docs/method.md §5: how the per-update KL sits against δ and which
 * stages regressed. Whether the certificate ranks updates like the measured improvement does is
 * `rankCorrelation` of the statistics module.
 */
import { ShapeError, TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';

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
