/**
 * A certificate that holds with a stated probability. The held-out certificate (certificate.ts)
 * is a batch mean: per trajectory c_r = g_r − c·p_r (surrogate-gain term minus penalty term),
 * whose expectation B lies below the true improvement J' − J. The mean itself sits above B about
 * half the time; a one-sided lower confidence bound at level 1 − α sits below B — and so below
 * J' − J — with probability at least 1 − α over the held-out batch.
 *
 * The independent units are clusters: trajectories of one prompt share the leave-one-out
 * baseline of their advantages (and their prompt), so they are not independent of each other.
 * The estimate is the pooled mean Σ c / n; its spread is read from the clusters.
 *
 * Methods, by what they assume:
 * - 'clustered-bootstrap': resample whole clusters, recompute the pooled mean, take the
 *   α-quantile (percentile bootstrap). No range needed; asymptotic, and it can undercover with
 *   few clusters or a heavy left tail.
 * - 'empirical-bernstein': valid at every sample size, but only for cluster means known a priori
 *   to lie in `range` (statistics/bounds.ts) and clusters of one size. Importance weights make c
 *   unbounded in general, so only a caller that can bound the ratios can use it.
 * - 'normal': pooled mean − z_{1−α}·(cluster-robust standard error). Asymptotic.
 */
import { TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';
import {
  empiricalBernsteinLowerBound,
  normalLowerBound,
  quantileOfSorted,
  resampledStatistics,
  type IndexSource,
} from './statistics/index.js';

export type CertificateBoundMethod = 'clustered-bootstrap' | 'empirical-bernstein' | 'normal';

export interface CertificateLowerBound {
  /** Σ perTrajectory / n − offset: the certificate as it is reported today. */
  estimate: number;
  /** Below B (and so below the true improvement) with probability ≥ 1 − α. */
  lowerBound: number;
  alpha: number;
  method: CertificateBoundMethod;
  /** Independent units the bound rests on. */
  clusters: number;
  /** Cluster-robust standard error of the estimate (NaN below two clusters). */
  standardError: number;
}

interface Cluster {
  total: number;
  size: number;
}

function clustersOf(values: NumberArray, clusterIds: NumberArray | undefined): Cluster[] {
  if (clusterIds && clusterIds.length !== values.length) {
    throw new TeamtrError(
      `certificateLowerBound: ${clusterIds.length} cluster ids for ${values.length} trajectories; ` +
        'pass one id (e.g. the prompt index) per trajectory',
    );
  }
  const byId = new Map<number, Cluster>();
  for (let index = 0; index < values.length; index++) {
    if (!Number.isFinite(values[index])) {
      throw new TeamtrError(
        `certificateLowerBound: the term of trajectory ${index} is ${values[index]}; ` +
          'every per-trajectory certificate term must be finite',
      );
    }
    const id = clusterIds ? clusterIds[index] : index;
    const cluster = byId.get(id) ?? { total: 0, size: 0 };
    cluster.total += values[index];
    cluster.size++;
    byId.set(id, cluster);
  }
  return [...byId.values()];
}

function pooledMean(clusters: readonly Cluster[]): number {
  let total = 0;
  let size = 0;
  for (const cluster of clusters) {
    total += cluster.total;
    size += cluster.size;
  }
  return total / size;
}

/** √(G/(G−1)·Σ_g (T_g − m·n_g)²) / n: the linearized (cluster-robust) SE of the pooled mean. */
function clusteredStandardError(clusters: readonly Cluster[], mean: number): number {
  const count = clusters.length;
  if (count < 2) return Number.NaN;
  let squares = 0;
  let size = 0;
  for (const cluster of clusters) {
    squares += (cluster.total - mean * cluster.size) ** 2;
    size += cluster.size;
  }
  return Math.sqrt((count / (count - 1)) * squares) / size;
}

interface BoundInputs {
  mean: number;
  standardError: number;
  alpha: number;
  random: IndexSource | undefined;
  samples: number;
  range: { low: number; high: number } | undefined;
}

/** Each method's lower bound on the pooled mean (before the offset), by method name. */
const lowerBoundOf: Readonly<
  Record<CertificateBoundMethod, (clusters: readonly Cluster[], inputs: BoundInputs) => number>
> = {
  normal: (_clusters, { mean, standardError, alpha }) =>
    normalLowerBound({ mean, standardError, alpha }),
  'empirical-bernstein': (clusters, { range, alpha }) => {
    if (!range) {
      throw new TeamtrError(
        "certificateLowerBound: method 'empirical-bernstein' needs `range`, bounds every " +
          "cluster mean is known to respect before sampling; without one use 'clustered-bootstrap'",
      );
    }
    if (clusters.some((cluster) => cluster.size !== clusters[0]!.size)) {
      throw new TeamtrError(
        "certificateLowerBound: method 'empirical-bernstein' needs clusters of one size (the " +
          "group size); use 'clustered-bootstrap' for clusters of different sizes",
      );
    }
    const means = clusters.map((cluster) => cluster.total / cluster.size);
    return empiricalBernsteinLowerBound({ values: means, range, alpha });
  },
  'clustered-bootstrap': (clusters, { random, samples, alpha }) => {
    if (!random) {
      throw new TeamtrError(
        "certificateLowerBound: method 'clustered-bootstrap' needs `random`, a seeded " +
          'generator (e.g. new RandomGenerator(`certificate/${stage}/${agent}`))',
      );
    }
    const draws = resampledStatistics(clusters, pooledMean, { random, samples });
    draws.sort((first, second) => first - second);
    return quantileOfSorted(draws, alpha);
  },
};

/**
 * A lower bound on the expected certificate from one held-out batch, at confidence 1 − α.
 * `random` drives the bootstrap (seeded by the caller: the same seed gives the same bound).
 */
export function certificateLowerBound({
  perTrajectory,
  clusterIds,
  offset = 0,
  alpha = 0.05,
  method = 'clustered-bootstrap',
  random,
  samples = 2000,
  range,
}: {
  /** [rows] c_r = g_r − c·p_r per held-out trajectory, in reward units. */
  perTrajectory: NumberArray;
  /** [rows] the cluster of each trajectory (its prompt). @default each trajectory its own */
  clusterIds?: NumberArray;
  /** A constant the certificate subtracts as well (e.g. a stale-shift penalty). @default 0 */
  offset?: number;
  /** @default 0.05 */
  alpha?: number;
  /** @default 'clustered-bootstrap' */
  method?: CertificateBoundMethod;
  /** Required by 'clustered-bootstrap'. */
  random?: IndexSource;
  /** Bootstrap resamples. @default 2000 */
  samples?: number;
  /** Required by 'empirical-bernstein': a priori bounds on every cluster mean of perTrajectory. */
  range?: { low: number; high: number };
}): CertificateLowerBound {
  if (!(alpha > 0 && alpha < 1)) {
    throw new TeamtrError(
      `certificateLowerBound: alpha must lie strictly between 0 and 1, got ${alpha} ` +
        '(a bound at 95% confidence has alpha 0.05)',
    );
  }
  const bound = Object.hasOwn(lowerBoundOf, method) ? lowerBoundOf[method] : undefined;
  if (!bound) {
    throw new TeamtrError(
      `certificateLowerBound: unknown method "${method}" (methods: ${Object.keys(lowerBoundOf).join(', ')})`,
    );
  }
  const clusters = clustersOf(perTrajectory, clusterIds);
  const mean = clusters.length ? pooledMean(clusters) : Number.NaN;
  const standardError = clusteredStandardError(clusters, mean);
  const result = {
    estimate: mean - offset,
    alpha,
    method,
    clusters: clusters.length,
    standardError,
  };
  if (clusters.length < 2) return { ...result, lowerBound: Number.NaN };
  const lowerBound = bound(clusters, { mean, standardError, alpha, random, samples, range });
  return { ...result, lowerBound: lowerBound - offset };
}
