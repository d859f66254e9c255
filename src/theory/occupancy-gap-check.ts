import { occupancyGap, occupancyGapEstimate } from '../rl/index.js';
import { positionsOf, type TabularGame } from './game.js';
import { rollout } from './monte-carlo.js';
import type { TeamPolicy } from './policy.js';
import type { SeededRandom } from './random.js';
import { logRatioOf, transcriptTotalVariation } from './sampled-update.js';

/**
 * The occupancy-gap estimators against the exact total variation: repeated batches sampled from
 * the stale team, each giving log W of the earlier-updated agents' tokens per transcript, as a
 * trainer's first batch of a stage does.
 */
export interface OccupancyGapTrials {
  /** TV between the stale and the current team's transcript distributions, by enumeration. */
  exact: number;
  /** mean (1 − W)_+ of each batch (rl/occupancy-gap.ts). */
  estimates: number[];
  /** ½·mean|W − 1| of each batch (rl/improvement.ts occupancyGap, the older estimator). */
  halfAbsoluteDeviations: number[];
  /** Batches whose interval contained the exact value. */
  covered: number;
}

export function occupancyGapTrials({
  game,
  stale,
  current,
  earlierAgents,
  trajectories,
  trials,
  alpha,
  random,
}: {
  game: TabularGame;
  /** The team that samples the batch (the start of the stage). */
  stale: TeamPolicy;
  /** The team after the earlier agents' updates. */
  current: TeamPolicy;
  earlierAgents: readonly number[];
  /** Trajectories per batch. */
  trajectories: number;
  trials: number;
  alpha: number;
  random: SeededRandom;
}): OccupancyGapTrials {
  const positions = earlierAgents.flatMap((agent) => positionsOf(game, agent));
  const exact = transcriptTotalVariation(game, stale, current);
  const result: OccupancyGapTrials = {
    exact,
    estimates: [],
    halfAbsoluteDeviations: [],
    covered: 0,
  };
  for (let trial = 0; trial < trials; trial++) {
    const logRatioEarlierAgents = Float64Array.from({ length: trajectories }, () =>
      logRatioOf(game, stale, current, rollout(game, stale, random), positions),
    );
    const estimate = occupancyGapEstimate({ logRatioEarlierAgents, alpha });
    result.estimates.push(estimate.gap);
    result.halfAbsoluteDeviations.push(occupancyGap({ logRatioEarlierAgents }).gap);
    if (estimate.interval[0] <= exact && exact <= estimate.interval[1]) result.covered++;
  }
  return result;
}
