import { occupancyGap, occupancyGapEstimate } from '../rl/index.js';
import { createGame, gameFamilyByName } from './families.js';
import { positionsOf, type TabularGame } from './game.js';
import { rollout } from './monte-carlo.js';
import { randomTeamPolicy, type TeamPolicy } from './policy.js';
import { createSeededRandom, deriveSeed, type SeededRandom } from './random.js';
import {
  logRatioOf,
  transcriptTotalVariation,
  updateAgents,
  withAgentRows,
} from './sampled-update.js';

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

/** A stale team, the team after its earlier agents moved, and who moved. */
export interface OccupancyGapCase {
  label: string;
  game: TabularGame;
  stale: TeamPolicy;
  current: TeamPolicy;
  earlierAgents: readonly number[];
}

/**
 * The lab's cases (N = 3, T = 2): in one game of each of four families, agents 0 and 1 take
 * KL-0.05 trust-region steps (W light-tailed); and a heavy-tailed case, where agent 0's token 0
 * goes from probability 0.02 to 0.5 at every state (W up to 0.25/0.0004 = 625).
 */
export function occupancyGapCases(seed: number): OccupancyGapCase[] {
  const gameOf = (family: string, vocabularySize: number, index: number) => {
    const random = createSeededRandom(deriveSeed(seed, index));
    const shape = { agentCount: 3, tokensPerTurn: 2, vocabularySize, rounds: 1, family };
    const game = createGame(shape, gameFamilyByName(family), random);
    return { game, team: randomTeamPolicy(game, random, 1) };
  };
  const families = [
    ['random', 2],
    ['dense', 2],
    ['chain', 3],
    ['consensus', 2],
  ] as const;
  const cases: OccupancyGapCase[] = families.map(([family, vocabularySize], index) => {
    const { game, team } = gameOf(family, vocabularySize, index);
    const current = updateAgents(game, team, [0, 1], 0.05);
    return {
      label: `${family}, V = ${vocabularySize}`,
      game,
      stale: team,
      current,
      earlierAgents: [0, 1],
    };
  });
  const { game, team } = gameOf('random', 2, families.length);
  cases.push({
    label: 'heavy-tailed W (up to 625)',
    game,
    stale: withAgentRows(game, team, 0, [0.02, 0.98]),
    current: withAgentRows(game, team, 0, [0.5, 0.5]),
    earlierAgents: [0],
  });
  return cases;
}
