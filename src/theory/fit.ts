import type { SeededRandom } from './random.js';

/**
 * Power-law fits for the scaling experiment: the slope of log(mean value) against log(N) by
 * ordinary least squares, with a percentile bootstrap interval that resamples games (with
 * replacement, within each N) and refits.
 */
export interface LineFit {
  readonly slope: number;
  readonly intercept: number;
}

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

export function mean(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total / values.length;
}

/** Standard error of the mean (sample standard deviation / √n); 0 for a single value. */
export function standardError(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const center = mean(values);
  let squares = 0;
  for (const value of values) squares += (value - center) ** 2;
  return Math.sqrt(squares / (values.length - 1) / values.length);
}

/** The q-quantile of sorted values, linear interpolation between order statistics. */
export function quantile(sortedValues: readonly number[], q: number): number {
  const position = q * (sortedValues.length - 1);
  const lower = Math.floor(position);
  const upper = Math.min(lower + 1, sortedValues.length - 1);
  const fraction = position - lower;
  return sortedValues[lower]! * (1 - fraction) + sortedValues[upper]! * fraction;
}

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
  const slopes: number[] = [];
  const resampledLogMeans = new Array<number>(groups.length);
  for (let sample = 0; sample < input.bootstrapSamples; sample++) {
    let valid = true;
    input.groups.forEach((group, index) => {
      let total = 0;
      for (let draw = 0; draw < group.values.length; draw++) {
        total += group.values[input.random.nextInteger(group.values.length)]!;
      }
      const resampledMean = total / group.values.length;
      if (!(resampledMean > floor)) valid = false;
      resampledLogMeans[index] = Math.log(resampledMean);
    });
    if (valid) slopes.push(leastSquaresLine(logN, resampledLogMeans).slope);
  }
  slopes.sort((first, second) => first - second);
  const interval: readonly [number, number] | null =
    slopes.length > 0 ? [quantile(slopes, 0.025), quantile(slopes, 0.975)] : null;
  return { slope: fit.slope, intercept: fit.intercept, interval, groups, note: null };
}
