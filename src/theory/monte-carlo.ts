import { meanWithStandardError } from '../rl/index.js';
import type { TabularGame } from './game.js';
import type { TeamPolicy } from './policy.js';
import type { SeededRandom } from './random.js';

/**
 * Brute-force Monte Carlo estimators of the exact quantities, by sampling transcripts token by
 * token. They exist to check exact.ts and schedules.ts against an independent computation.
 */
export interface Estimate {
  readonly mean: number;
  readonly standardError: number;
  readonly samples: number;
}

/**
 * Continues the prefix `prefix` of length `depth` to a complete transcript with `team`, and
 * returns the transcript's index. `depth = 0, prefix = 0` samples a whole episode.
 */
export function rollout(
  game: TabularGame,
  team: TeamPolicy,
  random: SeededRandom,
  depth = 0,
  prefix = 0,
): number {
  const vocabularySize = game.vocabularySize;
  let state = prefix;
  for (let position = depth; position < game.horizon; position++) {
    const probabilities = team.tables[position]!.probabilities;
    const rowStart = state * vocabularySize;
    let remaining = random.nextFloat();
    let token = vocabularySize - 1;
    for (let candidate = 0; candidate < vocabularySize - 1; candidate++) {
      remaining -= probabilities[rowStart + candidate]!;
      if (remaining < 0) {
        token = candidate;
        break;
      }
    }
    state = rowStart + token;
  }
  return state;
}

/** The prefix of length `depth` of a complete transcript. */
export function prefixOf(game: TabularGame, transcript: number, depth: number): number {
  return Math.floor(transcript / game.vocabularySize ** (game.horizon - depth));
}

/** Mean and standard error of `samples` draws of `draw()`. */
export function estimate(samples: number, draw: () => number): Estimate {
  const draws = new Float64Array(samples);
  for (let sample = 0; sample < samples; sample++) draws[sample] = draw();
  const { mean, standardError } = meanWithStandardError(draws);
  return { mean, standardError, samples };
}

/** J(team) = E[R]. */
export function estimateReturn(
  game: TabularGame,
  team: TeamPolicy,
  random: SeededRandom,
  samples: number,
): Estimate {
  return estimate(samples, () => game.rewards[rollout(game, team, random)]!);
}

/** d_depth(prefix): the frequency of the prefix among sampled episodes. */
export function estimateOccupancy(
  game: TabularGame,
  team: TeamPolicy,
  random: SeededRandom,
  samples: number,
  at: { readonly depth: number; readonly prefix: number },
): Estimate {
  return estimate(samples, () =>
    prefixOf(game, rollout(game, team, random), at.depth) === at.prefix ? 1 : 0,
  );
}

/** Q_position(prefix, token): mean reward of rollouts that start from prefix·token. */
export function estimateActionValue(
  game: TabularGame,
  team: TeamPolicy,
  random: SeededRandom,
  samples: number,
  at: { readonly position: number; readonly prefix: number; readonly token: number },
): Estimate {
  const start = at.prefix * game.vocabularySize + at.token;
  return estimate(
    samples,
    () => game.rewards[rollout(game, team, random, at.position + 1, start)]!,
  );
}

/**
 * J(newTeam) − J(team) from episodes of `team` alone: E_team[(W − 1) R], W the product over the
 * changed positions of π_new(a|s) / π_old(a|s) (docs/method.md §5's off-policy estimate).
 */
export function estimateImprovementOffPolicy(
  game: TabularGame,
  team: TeamPolicy,
  newTeam: TeamPolicy,
  changedPositions: readonly number[],
  random: SeededRandom,
  samples: number,
): Estimate {
  return estimate(samples, () => {
    const transcript = rollout(game, team, random);
    let logRatio = 0;
    for (const position of changedPositions) {
      const entry = prefixOf(game, transcript, position + 1);
      logRatio +=
        newTeam.tables[position]!.logProbabilities[entry]! -
        team.tables[position]!.logProbabilities[entry]!;
    }
    return (Math.exp(logRatio) - 1) * game.rewards[transcript]!;
  });
}

/**
 * The surrogate Σ_{h∈positions} E_{s∼d_h}[Σ_a π_new(a|s) A(s, a)] from episodes of `team`, with
 * A given (each episode contributes the inner sum at the states it visits).
 */
export function estimateSurrogate(
  game: TabularGame,
  team: TeamPolicy,
  newTeam: TeamPolicy,
  advantages: readonly Float64Array[],
  positions: readonly number[],
  random: SeededRandom,
  samples: number,
): Estimate {
  const vocabularySize = game.vocabularySize;
  return estimate(samples, () => {
    const transcript = rollout(game, team, random);
    let total = 0;
    for (const position of positions) {
      const rowStart = prefixOf(game, transcript, position) * vocabularySize;
      for (let token = 0; token < vocabularySize; token++) {
        total +=
          newTeam.tables[position]!.probabilities[rowStart + token]! *
          advantages[position]![rowStart + token]!;
      }
    }
    return total;
  });
}
