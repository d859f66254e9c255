import { binomialInterval, mean } from '../rl/index.js';
import type { UpdateRecord } from '../trainer/records.js';
import { cellsOf, type ScalingCell, type ScalingRun } from './scaling-analysis.js';

/**
 * Per-cell diagnostics of the grid: how often the probabilistic certificate held on held-out
 * prompts next to the noise of that measurement, what the lazy schedule decided, and the
 * occupancy gap's range. Every figure is pooled over the cell's updates (all seeds), and every
 * rate carries Wilson's 95% interval, which treats updates as independent.
 */

const updatesOf = (runs: readonly ScalingRun[], cell: ScalingCell) =>
  runs
    .filter((run) => run.agents === cell.agents && run.schedule === cell.schedule)
    .flatMap((run) =>
      run.records.filter((record): record is UpdateRecord => record.type === 'update'),
    );

/** A rate with its Wilson interval (null interval when there is nothing to count). */
export interface Rate {
  successes: number;
  trials: number;
  rate: number;
  interval: [number, number] | null;
}

function rateOf(successes: number, trials: number): Rate {
  return {
    successes,
    trials,
    rate: trials ? successes / trials : Number.NaN,
    interval: trials ? binomialInterval({ successes, trials }) : null,
  };
}

export interface CertificateCoverageRow extends ScalingCell {
  /** Updates with a held-out bound and a held-out improvement. */
  updates: number;
  /** The stated probability (certificate.confidence). */
  stated: number;
  /** Second-order bound ≤ the measured held-out improvement. */
  held: Rate;
  /** Second-order bound ≤ measured + 1.96 × its standard error (what noise alone allows). */
  heldWithinNoise: Rate;
  /** First-order bound ≤ the measured held-out improvement. */
  firstOrderHeld: Rate;
  /**
   * The least "held within noise" rate a bound valid at its stated rate gives: such a bound lies
   * below the true improvement with probability ≥ stated, and the measurement then falls more
   * than 1.96 standard errors below the truth with probability 0.025 (normal approximation), so
   * P(bound ≤ measured + 1.96·SE) ≥ stated × 0.975.
   */
  floorIfValid: number;
  /**
   * The cell's data are consistent with a bound valid at its stated rate: the upper end of the
   * "held within noise" interval reaches floorIfValid. The strongest check a noisy measurement
   * allows; the exact check (the truth known) is the tabular lab's (theory/certificate-coverage.ts).
   */
  consistentWithStated: boolean;
  /** Mean of bound − measured (second order): below 0 for a bound that holds on average. */
  meanExcess: number;
  /** √(2/π) × mean standard error of the measured improvement: E|noise| of the yardstick. */
  noiseFloor: number;
}

/** "Within noise": up to 1.96 standard errors, whose lower normal tail holds 0.025. */
const WITHIN_NOISE = 1.96;
const NOISE_TAIL = 0.025;

export function certificateCoverage(runs: readonly ScalingRun[]): CertificateCoverageRow[] {
  return cellsOf(runs).flatMap((cell) => {
    const measured = updatesOf(runs, cell).filter(
      (update) =>
        Number.isFinite(update.heldOutSecondOrderCertificateLowerBound) &&
        Number.isFinite(update.heldOutImprovement),
    );
    if (measured.length === 0) return [];
    const bound = (update: UpdateRecord) => update.heldOutSecondOrderCertificateLowerBound!;
    const improvement = (update: UpdateRecord) => update.heldOutImprovement!;
    const error = (update: UpdateRecord) => update.heldOutImprovementStandardError ?? 0;
    const count = (test: (update: UpdateRecord) => boolean) =>
      rateOf(measured.filter(test).length, measured.length);
    const stated = measured[0]!.heldOutBoundConfidence ?? Number.NaN;
    const heldWithinNoise = count(
      (update) => bound(update) <= improvement(update) + WITHIN_NOISE * error(update),
    );
    const floorIfValid = stated * (1 - NOISE_TAIL);
    return [
      {
        ...cell,
        updates: measured.length,
        stated,
        held: count((update) => bound(update) <= improvement(update)),
        heldWithinNoise,
        floorIfValid,
        consistentWithStated: (heldWithinNoise.interval?.[1] ?? 0) >= floorIfValid,
        firstOrderHeld: count(
          (update) => (update.heldOutCertificateLowerBound ?? Infinity) <= improvement(update),
        ),
        meanExcess: mean(measured.map((update) => bound(update) - improvement(update))),
        noiseFloor: Math.sqrt(2 / Math.PI) * mean(measured.map(error)),
      },
    ];
  });
}

export interface ResamplingRow extends ScalingCell {
  /** Decisions taken (every update but a stage's last). */
  decisions: number;
  resampled: Rate;
  /** Mean TV̂ of the batch in hand at a decision. */
  meanTotalVariation: number;
  /** Median of 2ε·TV̂ / slack over decisions (∞ where the slack was 0). */
  medianStaleOverSlack: number;
  meanEffectiveSampleSize: number;
  /**
   * Batches per stage, its first and its closing one included: N + 1 for teamtr, 2 for
   * sequential-stale (the closing batch is suffix-resampled after a lone update, or full).
   */
  batchesPerStage: number;
}

/** The median, ∞ allowed (interpolating towards ∞ would give NaN). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** What the lazy schedule decided in each of its cells. */
export function resamplingDecisions(runs: readonly ScalingRun[]): ResamplingRow[] {
  return cellsOf(runs).flatMap((cell) => {
    const updates = updatesOf(runs, cell);
    const decisions = updates.flatMap((update) => (update.resampling ? [update.resampling] : []));
    if (decisions.length === 0) return [];
    const stages = runs
      .filter((run) => run.agents === cell.agents && run.schedule === cell.schedule)
      .reduce(
        (total, run) => total + run.records.filter((record) => record.type === 'stage').length,
        0,
      );
    const resamples = decisions.filter((decision) => decision.resampled).length;
    return [
      {
        ...cell,
        decisions: decisions.length,
        resampled: rateOf(resamples, decisions.length),
        meanTotalVariation: mean(decisions.map((decision) => decision.totalVariation)),
        medianStaleOverSlack: median(
          decisions.map((decision) =>
            decision.slack > 0 ? decision.staleTerm / decision.slack : Infinity,
          ),
        ),
        meanEffectiveSampleSize: mean(decisions.map((decision) => decision.effectiveSampleSize)),
        batchesPerStage: 2 + resamples / stages,
      },
    ];
  });
}

export interface OccupancyRangeRow extends ScalingCell {
  updates: number;
  largest: number;
  /** Estimates outside [0, 1] (0 for the (1 − W)_+ estimator). */
  outside: number;
}

/** The largest occupancy-gap estimate of each cell, and how many left [0, 1]. */
export function occupancyRange(runs: readonly ScalingRun[]): OccupancyRangeRow[] {
  return cellsOf(runs).flatMap((cell) => {
    const gaps = updatesOf(runs, cell)
      .map((update) => update.occupancyGap)
      .filter((gap): gap is number => typeof gap === 'number');
    if (gaps.length === 0) return [];
    return [
      {
        ...cell,
        updates: gaps.length,
        largest: Math.max(...gaps),
        outside: gaps.filter((gap) => gap < 0 || gap > 1).length,
      },
    ];
  });
}
