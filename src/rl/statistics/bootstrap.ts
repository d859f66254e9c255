/**
 * The percentile bootstrap, written once: resample the independent units with replacement,
 * recompute the statistic, read the interval off the quantiles of the recomputed values
 * (Efron & Tibshirani 1993, ch. 13). The units are what is independent — runs (seeds), stages
 * of runs, trajectories of a batch, prompt groups — never values that share a sample.
 *
 * Randomness comes in: every function takes the generator it draws from (`IndexSource`; the
 * project's RandomGenerator is one), so the same seed gives the same interval, bit for bit.
 */
import { mean, quantileOfSorted } from './descriptive.js';

/** Where resampling draws its indices: a uniform integer in [0, maxExclusive). */
export interface IndexSource {
  nextInt(maxExclusive: number): number;
}

/** A statistic with its percentile-bootstrap interval. */
export interface Estimate {
  value: number;
  /** [lower, upper] quantiles of the statistic over resamples; null with fewer than two units. */
  interval: [number, number] | null;
}

export interface BootstrapOptions {
  /** The stream the resamples draw from (seeded by the caller). */
  random: IndexSource;
  /** @default 2000 */
  samples?: number;
  /**
   * Two-sided error rate α: the interval spans the α/2 and 1 − α/2 quantiles (coverage 1 − α).
   * Stated as α, not as the coverage, because α/2 is exact in floating point. @default 0.05
   */
  alpha?: number;
}

/**
 * The statistic of `samples` stratified resamples: each stratum resampled with replacement at
 * its own size, the statistic taking every resampled stratum (in draw order). Draws run
 * sample → stratum → unit; `random` is one stream shared by the strata or one per stratum (with
 * one per stratum, each stratum's draws do not depend on the others'). One stratum is the plain
 * bootstrap.
 */
export function stratifiedResamples<Unit>({
  strata,
  statistic,
  samples,
  random,
}: {
  strata: readonly (readonly Unit[])[];
  statistic: (resampled: readonly (readonly Unit[])[]) => number;
  samples: number;
  random: IndexSource | readonly IndexSource[];
}): number[] {
  const sources = Array.isArray(random) ? (random as readonly IndexSource[]) : null;
  if (sources && sources.length !== strata.length) {
    throw new RangeError(
      `stratifiedResamples: ${sources.length} random streams for ${strata.length} strata; ` +
        'pass one stream, or one per stratum',
    );
  }
  const resampled = strata.map((stratum) => new Array<Unit>(stratum.length));
  const values: number[] = [];
  for (let sample = 0; sample < samples; sample++) {
    strata.forEach((stratum, index) => {
      const source = sources ? sources[index]! : (random as IndexSource);
      const target = resampled[index]!;
      for (let draw = 0; draw < stratum.length; draw++) {
        target[draw] = stratum[source.nextInt(stratum.length)]!;
      }
    });
    values.push(statistic(resampled));
  }
  return values;
}

/** The statistic of `samples` resamples of `units` with replacement, in draw order. */
export function resampledStatistics<Unit>(
  units: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  { random, samples = 2000 }: Omit<BootstrapOptions, 'alpha'>,
): number[] {
  return stratifiedResamples({
    strata: [units],
    statistic: ([sample]) => statistic(sample!),
    samples,
    random,
  });
}

/**
 * The α/2 and 1 − α/2 quantiles of the finite values (non-finite ones — a statistic undefined
 * on a resample — are dropped), or null when none is finite.
 */
export function percentileInterval(
  values: readonly number[],
  alpha = 0.05,
): [number, number] | null {
  if (!(alpha > 0 && alpha < 1)) {
    throw new RangeError(`percentileInterval: alpha must lie in (0, 1), got ${alpha}`);
  }
  const sorted = values.filter(Number.isFinite).sort((first, second) => first - second);
  if (sorted.length === 0) return null;
  return [quantileOfSorted(sorted, alpha / 2), quantileOfSorted(sorted, 1 - alpha / 2)];
}

/** The statistic of `units` with its percentile-bootstrap interval (null below two units). */
export function bootstrap<Unit>(
  units: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  options: BootstrapOptions,
): Estimate {
  const value = statistic(units);
  if (units.length < 2) return { value, interval: null };
  const draws = resampledStatistics(units, statistic, options);
  return { value, interval: percentileInterval(draws, options.alpha) };
}

/**
 * statistic(numerator) / statistic(denominator) with a percentile interval from resampling the
 * two groups independently (each from its own stream), draw by draw.
 */
export function bootstrapRatio<Unit>(
  numerator: readonly Unit[],
  denominator: readonly Unit[],
  statistic: (sample: readonly Unit[]) => number,
  random: { numerator: IndexSource; denominator: IndexSource },
  { samples = 2000, alpha = 0.05 }: { samples?: number; alpha?: number } = {},
): Estimate {
  const over = (units: readonly Unit[], source: IndexSource) =>
    resampledStatistics(units, statistic, { random: source, samples });
  const numeratorDraws = over(numerator, random.numerator);
  const denominatorDraws = over(denominator, random.denominator);
  return {
    value: statistic(numerator) / statistic(denominator),
    interval: percentileInterval(
      numeratorDraws.map((value, draw) => value / denominatorDraws[draw]!),
      alpha,
    ),
  };
}

/**
 * The mean paired difference, second − first, with its bootstrap interval: the pairs (e.g. two
 * schedules run on the same seed) are the units, so what the pair shares — the seed's untrained
 * baseline, its prompts — cancels inside each difference.
 */
export function pairedBootstrap({
  first,
  second,
  ...options
}: BootstrapOptions & { first: readonly number[]; second: readonly number[] }): Estimate {
  if (first.length !== second.length) {
    throw new RangeError(
      `pairedBootstrap: ${first.length} first values but ${second.length} second values; ` +
        'pass one value of each per pair',
    );
  }
  const differences = second.map((value, index) => value - first[index]!);
  return bootstrap(differences, mean, options);
}

/**
 * The pooled mean of every observation with an interval from resampling whole clusters (stages
 * whose updates share a batch, trajectories whose tokens share a context, prompts whose
 * trajectories share a baseline): what a cluster's members have in common stays together, so
 * the interval is not too narrow when they are correlated.
 */
export function clusteredBootstrap({
  clusters,
  ...options
}: BootstrapOptions & { clusters: readonly (readonly number[])[] }): Estimate {
  return bootstrap(clusters, (sample) => mean(sample.flat()), options);
}
