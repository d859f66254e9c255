import {
  leastSquaresLine,
  mean,
  percentileInterval,
  standardError,
  stratifiedResamples,
} from '../rl/index.js';
import type { SeededRandom } from './random.js';

/**
 * Power-law fits for the scaling experiment: the slope of log(mean value) against log(N) by
 * ordinary least squares, with a percentile bootstrap interval that resamples games (with
 * replacement, within each N) and refits.
 */
/** The per-game values of one metric at one team size. */
export interface ScalingGroup {
  readonly agentCount: number;
  readonly values: readonly number[];
}

export interface GroupSummary {
  readonly agentCount: number;
  readonly games: number;
  readonly mean: number;
  readonly standardError: number;
}

export interface PowerLawFit {
  /** Fitted exponent of mean ∝ N^slope; null when some mean is not positive. */
  readonly slope: number | null;
  /** log(mean) at log N = 0 of the fitted line; null with the slope. */
  readonly intercept: number | null;
  /** 95% percentile-bootstrap interval of the slope, [low, high]; null with the slope. */
  readonly interval: readonly [number, number] | null;
  readonly groups: readonly GroupSummary[];
  /** Why the slope is null, when it is. */
  readonly note: string | null;
}

export interface PowerLawFitInput {
  readonly groups: readonly ScalingGroup[];
  readonly bootstrapSamples: number;
  readonly random: SeededRandom;
  /** Means at or below this are treated as zero (e.g. float rounding); default 0. */
  readonly negligibleBelow?: number;
}

export function fitPowerLaw(input: PowerLawFitInput): PowerLawFit {
  const floor = input.negligibleBelow ?? 0;
  const groups = input.groups.map((group) => ({
    agentCount: group.agentCount,
    games: group.values.length,
    mean: mean(group.values),
    standardError: standardError(group.values),
  }));
  const logN = groups.map((group) => Math.log(group.agentCount));
  if (groups.some((group) => !(group.mean > floor))) {
    const note = `a mean is not above ${floor.toExponential(1)}, so log(mean) is undefined`;
    return { slope: null, intercept: null, interval: null, groups, note };
  }
  const fit = leastSquaresLine(
    logN,
    groups.map((group) => Math.log(group.mean)),
  );
  // One stream for every N, drawn sample by sample, N by N: the games of each N are resampled
  // and the line refitted; a resample whose mean is not above the floor has no slope.
  const random = { nextInt: (bound: number) => input.random.nextInteger(bound) };
  const slopes = stratifiedResamples({
    strata: input.groups.map((group) => group.values),
    statistic: (resampled) => {
      const means = resampled.map((values) => mean(values));
      return means.every((value) => value > floor)
        ? leastSquaresLine(logN, means.map(Math.log)).slope
        : Number.NaN;
    },
    samples: input.bootstrapSamples,
    random,
  });
  const interval = percentileInterval(slopes);
  return { slope: fit.slope, intercept: fit.intercept, interval, groups, note: null };
}
