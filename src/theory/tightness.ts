import { quantileOfSorted } from '../rl/index.js';
import { certificateBounds, type CertificateBoundKey } from './certificate-bounds.js';
import type { UpdateRecord } from './schedules.js';

/**
 * How tight each certificate of certificate-bounds.ts is: per bound, its violations (certificate
 * above the true improvement beyond rounding) and the ratio certificate / true improvement over
 * the updates that improved (true > 0). A valid bound has ratio ≤ 1; 1 is exact, 0 certifies
 * nothing, −10 means the certificate sits ten true improvements below zero.
 */
export interface BoundTally {
  readonly updates: number;
  readonly violations: number;
  /** max over updates of certificate − true (≤ 0 when the bound holds everywhere). */
  readonly maxExcess: number;
  /** Updates whose certificate is > 0, i.e. that it certifies as improvements. */
  readonly positive: number;
  /** certificate / true improvement of every update with true improvement > 0. */
  readonly ratios: readonly number[];
}

export type BoundTallies = Readonly<Record<CertificateBoundKey, BoundTally>>;

/** Rounding allowance of a certificate check: 1e−12 of the largest magnitude involved, ≥ 1e−12. */
export function certificateTolerance(update: UpdateRecord): number {
  const scale = Math.max(
    1,
    Math.abs(update.returnBefore),
    Math.abs(update.returnAfter),
    Math.abs(update.certificate.surrogate),
    update.certificate.penalty,
  );
  return 1e-12 * scale;
}

function emptyTally(): BoundTally {
  return { updates: 0, violations: 0, maxExcess: -Infinity, positive: 0, ratios: [] };
}

function emptyTallies(): Record<CertificateBoundKey, BoundTally> {
  const tallies = {} as Record<CertificateBoundKey, BoundTally>;
  for (const { key } of certificateBounds) tallies[key] = emptyTally();
  return tallies;
}

/** Tallies every bound over the updates of one stage. */
export function tallyBounds(updates: readonly UpdateRecord[]): BoundTallies {
  const tallies = emptyTallies();
  for (const update of updates) {
    const tolerance = certificateTolerance(update);
    const truth = update.trueImprovement;
    for (const { key } of certificateBounds) {
      const value = update.tighterCertificates[key];
      const tally = tallies[key];
      tallies[key] = {
        updates: tally.updates + 1,
        violations: tally.violations + (value - truth > tolerance ? 1 : 0),
        maxExcess: Math.max(tally.maxExcess, value - truth),
        positive: tally.positive + (value > 0 ? 1 : 0),
        ratios: truth > 0 ? [...tally.ratios, value / truth] : tally.ratios,
      };
    }
  }
  return tallies;
}

/** Sums tallies (of several stages, games or families). */
export function mergeTallies(parts: readonly BoundTallies[]): BoundTallies {
  const merged = emptyTallies();
  for (const { key } of certificateBounds) {
    const ratios: number[] = [];
    let { updates, violations, maxExcess, positive } = merged[key];
    for (const part of parts) {
      const tally = part[key];
      updates += tally.updates;
      violations += tally.violations;
      maxExcess = Math.max(maxExcess, tally.maxExcess);
      positive += tally.positive;
      for (const ratio of tally.ratios) ratios.push(ratio);
    }
    merged[key] = { updates, violations, maxExcess, positive, ratios };
  }
  return merged;
}

/** Tallies keyed by schedule name (`teamtr`, `sequential-stale`, `joint`). */
export type TalliesBySchedule = Readonly<Record<string, BoundTallies>>;

/** Sums tallies schedule by schedule. */
export function mergeBySchedule(parts: readonly TalliesBySchedule[]): TalliesBySchedule {
  const names = [...new Set(parts.flatMap((part) => Object.keys(part)))];
  const merged: Record<string, BoundTallies> = {};
  for (const name of names) {
    merged[name] = mergeTallies(parts.flatMap((part) => (part[name] ? [part[name]] : [])));
  }
  return merged;
}

/** Every schedule's tallies together. */
export function allSchedules(bySchedule: TalliesBySchedule): BoundTallies {
  return mergeTallies(Object.values(bySchedule));
}

export interface BoundTightness {
  readonly description: string;
  readonly updates: number;
  readonly violations: number;
  /** max(0, largest certificate − true improvement). */
  readonly max_violation: number;
  /** Share of updates with a positive certificate. */
  readonly fraction_positive: number;
  /** Updates with true improvement > 0 (the ratios' sample). */
  readonly improving_updates: number;
  /** Quantiles of certificate / true improvement over improving updates (null if none). */
  readonly ratio_quantiles: {
    readonly q10: number;
    readonly q25: number;
    readonly median: number;
    readonly q75: number;
    readonly q90: number;
  } | null;
}

/** The JSON form of every bound's tally, keyed by `summaryKey`. */
export function describeTightness(tallies: BoundTallies): Record<string, BoundTightness> {
  const result: Record<string, BoundTightness> = {};
  for (const { key, summaryKey, description } of certificateBounds) {
    const tally = tallies[key];
    const sorted = [...tally.ratios].sort((first, second) => first - second);
    result[summaryKey] = {
      description,
      updates: tally.updates,
      violations: tally.violations,
      max_violation: Math.max(0, tally.maxExcess),
      fraction_positive: tally.updates === 0 ? 0 : tally.positive / tally.updates,
      improving_updates: sorted.length,
      ratio_quantiles:
        sorted.length === 0
          ? null
          : {
              q10: quantileOfSorted(sorted, 0.1),
              q25: quantileOfSorted(sorted, 0.25),
              median: quantileOfSorted(sorted, 0.5),
              q75: quantileOfSorted(sorted, 0.75),
              q90: quantileOfSorted(sorted, 0.9),
            },
    };
  }
  return result;
}
