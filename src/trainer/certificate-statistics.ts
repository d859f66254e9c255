import {
  inRegionTolerance,
  meanWithStandardError,
  outOfRegionRate,
  rankCorrelation,
} from '../rl/index.js';
import type { MetricsRecord, UpdateRecord } from './records.js';

/**
 * How a run's certificates compare with what its updates measurably did. Each certified lower
 * bound (first and second order, docs/method.md §5) is read on two batches: the one its update
 * was fitted to (the update maximized the surrogate there, so that estimate reads high) and,
 * when the run measures out of sample, the held-out batch (an unbiased estimate). Each is held
 * against the in-sample and the held-out measured improvement.
 */
export interface CertificateStatistics {
  updates: number;
  meanKl: number;
  outOfRegionRate: number;
  /** The first-order certificate on each update's own batch, against the in-sample improvement. */
  cumulativeRankCorrelation: number | null;
  perUpdateRankCorrelation: number | null;
  /** Fraction of measured updates whose certificate exceeded the measured improvement. */
  certificateAboveMeasuredFraction: number | null;
  meanCertificate: number;
  meanMeasuredImprovement: number | null;
  /** Fraction of updates certified to improve (certificate > 0). */
  certifiedFraction: number;
  /** The same against the held-out improvement (certificate.heldOutProblems > 0), else null. */
  heldOut: YardstickStatistics | null;
  /** The first-order certificate on each update's own batch (the fields above, in one place). */
  firstOrder: CertificateFormStatistics;
  /** The second-order certificate on each update's own batch; null for runs recorded before it. */
  secondOrder: CertificateFormStatistics | null;
  /** Both certificates estimated on the held-out batch; null when not measured. */
  heldOutBatch: {
    firstOrder: CertificateFormStatistics;
    secondOrder: CertificateFormStatistics;
  } | null;
}

/** One certificate, read on one kind of batch, against the yardsticks the run measured. */
export interface CertificateFormStatistics {
  meanCertificate: number;
  certifiedFraction: number;
  inSample: YardstickStatistics | null;
  heldOut: YardstickStatistics | null;
}

/** How a certificate compares with one measured improvement (the yardstick). */
export interface YardstickStatistics {
  updates: number;
  cumulativeRankCorrelation: number | null;
  perUpdateRankCorrelation: number | null;
  certificateAboveMeasuredFraction: number | null;
  meanMeasuredImprovement: number | null;
  /**
   * Mean of certificate − measured improvement over the updates, with its 95% interval. A valid
   * lower bound has it at or below 0; an interval wholly above 0 means the certificate, as
   * estimated, is not a lower bound here.
   */
  meanExcess: number | null;
  meanExcessInterval: [number, number] | null;
}

type Read = (record: UpdateRecord) => number | null | undefined;

const firstOrder: Read = (record) => record.certificate;
const secondOrder: Read = (record) => record.secondOrderCertificate;
const heldOutFirstOrder: Read = (record) => record.heldOutCertificate;
const heldOutSecondOrder: Read = (record) => record.heldOutSecondOrderCertificate;
const inSampleImprovement: Read = (record) => record.measuredImprovement;
const heldOutImprovement: Read = (record) => record.heldOutImprovement;

export function certificateStatistics(records: readonly MetricsRecord[]): CertificateStatistics {
  const updates = records.filter((record): record is UpdateRecord => record.type === 'update');
  const inSample = yardstick(updates, firstOrder, inSampleImprovement);
  const heldOutForms = {
    firstOrder: formStatistics(updates, heldOutFirstOrder, { heldOutOnly: true }),
    secondOrder: formStatistics(updates, heldOutSecondOrder, { heldOutOnly: true }),
  };
  return {
    updates: updates.length,
    meanKl: mean(updates.map((record) => record.kl)) ?? 0,
    outOfRegionRate: updates.length
      ? outOfRegionRate({
          updateKl: updates.map((record) => record.kl),
          delta: updates.map((record) => record.delta),
          tolerance: inRegionTolerance,
        }).rate
      : 0,
    cumulativeRankCorrelation: inSample.cumulativeRankCorrelation,
    perUpdateRankCorrelation: inSample.perUpdateRankCorrelation,
    certificateAboveMeasuredFraction: inSample.certificateAboveMeasuredFraction,
    meanCertificate: mean(updates.map((record) => record.certificate)) ?? 0,
    meanMeasuredImprovement: inSample.meanMeasuredImprovement,
    certifiedFraction: certifiedFraction(updates.map((record) => record.certificate)),
    heldOut: nonEmpty(yardstick(updates, firstOrder, heldOutImprovement)),
    firstOrder: formStatistics(updates, firstOrder, { heldOutOnly: false }) ?? {
      meanCertificate: 0,
      certifiedFraction: 0,
      inSample: null,
      heldOut: null,
    },
    secondOrder: formStatistics(updates, secondOrder, { heldOutOnly: false }),
    heldOutBatch:
      heldOutForms.firstOrder && heldOutForms.secondOrder
        ? { firstOrder: heldOutForms.firstOrder, secondOrder: heldOutForms.secondOrder }
        : null,
  };
}

/** A certificate form's statistics, or null when some update did not record it. */
function formStatistics(
  updates: readonly UpdateRecord[],
  bound: Read,
  { heldOutOnly }: { heldOutOnly: boolean },
): CertificateFormStatistics | null {
  const values = updates.map(bound);
  if (values.length === 0 || values.some((value) => value === null || value === undefined))
    return null;
  const certificates = values as number[];
  return {
    meanCertificate: mean(certificates) ?? 0,
    certifiedFraction: certifiedFraction(certificates),
    inSample: heldOutOnly ? null : nonEmpty(yardstick(updates, bound, inSampleImprovement)),
    heldOut: nonEmpty(yardstick(updates, bound, heldOutImprovement)),
  };
}

function yardstick(
  updates: readonly UpdateRecord[],
  bound: Read,
  measure: Read,
): YardstickStatistics {
  const measured = updates.filter((record) => isNumber(measure(record)) && isNumber(bound(record)));
  const certificates = measured.map((record) => bound(record)!);
  const improvements = measured.map((record) => measure(record)!);
  const correlation = (x: number[], y: number[]) =>
    x.length >= 3 ? finiteOrNull(rankCorrelation({ x, y })) : null;
  const excess = meanWithStandardError(
    certificates.map((certificate, index) => certificate - improvements[index]!),
  );
  const interval: [number, number] | null = Number.isFinite(excess.standardError)
    ? [excess.mean - 1.96 * excess.standardError, excess.mean + 1.96 * excess.standardError]
    : null;
  return {
    updates: measured.length,
    cumulativeRankCorrelation: correlation(cumulative(certificates), cumulative(improvements)),
    perUpdateRankCorrelation: correlation(certificates, improvements),
    certificateAboveMeasuredFraction: measured.length
      ? certificates.filter((value, index) => value > improvements[index]!).length / measured.length
      : null,
    meanMeasuredImprovement: mean(improvements),
    meanExcess: finiteOrNull(excess.mean),
    meanExcessInterval: interval,
  };
}

function nonEmpty(statistics: YardstickStatistics): YardstickStatistics | null {
  return statistics.updates > 0 ? statistics : null;
}

function isNumber(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function certifiedFraction(certificates: readonly number[]): number {
  return certificates.length
    ? certificates.filter((value) => value > 0).length / certificates.length
    : 0;
}

function cumulative(values: readonly number[]): number[] {
  let total = 0;
  return values.map((value) => (total += value));
}

function mean(values: readonly number[]): number | null {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}
