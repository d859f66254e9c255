import {
  effectiveSampleSize,
  occupancyGapEstimate,
  type OccupancyGapEstimate,
} from '../../rl/index.js';
import type { ScoringItem } from '../../nn/score.js';
import type { TeamBatch } from '../../team/types.js';
import { collectUnitTokens } from '../update/token-grid.js';
import type { UnitEngine } from '../update/engine.js';

/**
 * How far the team has moved from the team that sampled one batch (the stage's first, or the
 * batch a schedule holds): per trajectory of that batch, log W = Σ log(π_current/π_start) over
 * the tokens of the units updated since. It gives the occupancy gap of each update
 * (docs/method.md §5), the likelihood ratio with which the HAPPO-style schedule reweights a
 * stale batch, and what the lazy schedule reads to decide whether to resample.
 */
export class OccupancyTracker {
  private start: TeamBatch | null = null;
  private logRatio: Float64Array | null = null;
  private updates = 0;

  /** The batch whose team the drift is measured from (later calls keep the first). */
  begin(batch: TeamBatch): void {
    if (this.start) return;
    this.start = batch;
    this.logRatio = new Float64Array(batch.trajectories.length);
  }

  /** The batch the drift is measured from (null before `begin`). */
  get batch(): TeamBatch | null {
    return this.start;
  }

  /**
   * TV between the trajectories of the starting team and of the current one, estimated as the
   * batch mean of (1 − W)_+ (rl/occupancy-gap.ts: unbiased, in [0, 1], empirical-Bernstein
   * interval); null before the first update since `begin`.
   */
  gap(): OccupancyGapEstimate | null {
    if (this.updates === 0 || !this.logRatio) return null;
    return occupancyGapEstimate({ logRatioEarlierAgents: this.logRatio });
  }

  /**
   * Kish's effective sample size of the weights W over the batch, as a share of its size: 1
   * while nothing moved, small when a few trajectories carry the reweighted batch.
   */
  relativeEffectiveSampleSize(): number {
    const logRatio = this.logRatio ?? new Float64Array(0);
    if (logRatio.length === 0) return 1;
    return effectiveSampleSize(logRatio) / logRatio.length;
  }

  /** W_{<i} per trajectory of the first batch, clipped to [low, high] (for its variance). */
  clippedLikelihoodRatios(low: number, high: number): Float64Array {
    const logRatio = this.logRatio ?? new Float64Array(0);
    return logRatio.map((value) => Math.min(high, Math.max(low, Math.exp(value))));
  }

  /**
   * After the update of the unit playing `agentIndices`: adds log(π_new/π_start) of its tokens
   * in the first batch, scored by its engine. `known`: log π_new of the update's own tokens in scoring order (the update
   * measured them); when those are the first batch's tokens of the unit — the first update of a
   * stage, or a later one whose turns suffix resampling kept — they are used instead of scoring
   * the batch again.
   */
  async advance(
    agentIndices: readonly number[],
    engine: Pick<UnitEngine, 'completionLogProbs'>,
    known: { items: ScoringItem[]; logProbs: Float32Array } | null = null,
  ): Promise<void> {
    const scored = this.pending(agentIndices);
    if (!scored) return;
    const logProbs =
      known && sameItems(known.items, scored.items)
        ? splitByItem(known.items, known.logProbs)
        : await engine.completionLogProbs(scored.items);
    this.add(agentIndices, scored, logProbs);
  }

  private pending(agentIndices: readonly number[]) {
    this.updates++;
    if (!this.start || !this.logRatio) return null;
    const tokens = collectUnitTokens(this.start, agentIndices);
    return tokens.totalTokens === 0 ? null : tokens;
  }

  private add(
    agentIndices: readonly number[],
    tokens: ReturnType<typeof collectUnitTokens>,
    logProbs: ArrayLike<number>[],
  ): void {
    const start = this.start!;
    const logRatio = this.logRatio!;
    let itemIndex = 0;
    for (const trajectoryIndex of tokens.rowTrajectories) {
      const turns = start.trajectories[trajectoryIndex]!.turns.filter((turn) =>
        agentIndices.includes(turn.agentIndex),
      );
      for (const turn of turns) {
        const fresh = logProbs[itemIndex++]!;
        turn.logProbs.forEach((old, offset) => {
          logRatio[trajectoryIndex]! += fresh[offset]! - old;
        });
      }
    }
  }
}

function sameItems(left: readonly ScoringItem[], right: readonly ScoringItem[]): boolean {
  const same = (a: readonly number[], b: readonly number[]) =>
    a.length === b.length && a.every((value, index) => value === b[index]);
  return (
    left.length === right.length &&
    left.every(
      (item, index) =>
        same(item.context, right[index]!.context) &&
        same(item.completion, right[index]!.completion),
    )
  );
}

/** Flat per-token values in item order, one array per item. */
function splitByItem(items: readonly ScoringItem[], flat: Float32Array): Float32Array[] {
  let offset = 0;
  return items.map((item) => {
    const part = flat.subarray(offset, offset + item.completion.length);
    offset += item.completion.length;
    return part;
  });
}
