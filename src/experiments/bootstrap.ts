import { RandomGenerator } from '../util/random.js';

/** A statistic with its 95% percentile-bootstrap interval. */
export interface Estimate {
  value: number;
  /** [2.5%, 97.5%] of the statistic over resamples; null with fewer than two units. */
  interval: [number, number] | null;
}

export interface BootstrapOptions {
  /** Names the random stream: the same seed gives the same interval. */
  seed: string;
  /** @default 2000 */
  samples?: number;
}

/**
 * The statistic of `samples` resamples of `units` with replacement (the bootstrap
 * distribution, in draw order). The units are what is independent: runs (seeds), or stages of
 * runs, never single updates of one stage.
 */
export function resampledStatistics<Unit>(
  units: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  { seed, samples = 2000 }: BootstrapOptions,
): number[] {
  const random = new RandomGenerator(`bootstrap/${seed}`);
  const values: number[] = [];
  const resample = new Array<Unit>(units.length);
  for (let sample = 0; sample < samples; sample++) {
    for (let index = 0; index < units.length; index++) {
      resample[index] = units[random.nextInt(units.length)]!;
    }
    values.push(statistic(resample));
  }
  return values;
}

/** [2.5%, 97.5%] of the finite values, or null when there are none. */
export function percentileInterval(values: readonly number[]): [number, number] | null {
  const sorted = values.filter(Number.isFinite).sort((first, second) => first - second);
  if (sorted.length === 0) return null;
  return [quantileOfSorted(sorted, 0.025), quantileOfSorted(sorted, 0.975)];
}

/** The statistic of `units` with its percentile-bootstrap interval (null below two units). */
export function bootstrap<Unit>(
  units: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  options: BootstrapOptions,
): Estimate {
  const value = statistic(units);
  if (units.length < 2) return { value, interval: null };
  return { value, interval: percentileInterval(resampledStatistics(units, statistic, options)) };
}

/**
 * statistic(numerator) / statistic(denominator) with a percentile interval from resampling the
 * two groups independently (each with its own seed), draw by draw.
 */
export function bootstrapRatio<Unit>(
  numerator: readonly Unit[],
  denominator: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  seeds: { numerator: string; denominator: string },
): Estimate {
  const numeratorDraws = resampledStatistics(numerator, statistic, { seed: seeds.numerator });
  const denominatorDraws = resampledStatistics(denominator, statistic, {
    seed: seeds.denominator,
  });
  return {
    value: statistic(numerator) / statistic(denominator),
    interval: percentileInterval(
      numeratorDraws.map((value, draw) => value / denominatorDraws[draw]!),
    ),
  };
}

function quantileOfSorted(sorted: readonly number[], q: number): number {
  const position = q * (sorted.length - 1);
  const lower = Math.floor(position);
  const upper = Math.min(lower + 1, sorted.length - 1);
  return sorted[lower]! + (sorted[upper]! - sorted[lower]!) * (position - lower);
}

export function mean(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return values.length ? total / values.length : Number.NaN;
}
