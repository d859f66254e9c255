import { createGame, gameFamilyByName } from '../families.js';
import type { TabularGame } from '../game.js';
import { randomTeamPolicy, type TeamPolicy } from '../policy.js';
import { createSeededRandom } from '../random.js';

export interface GameSetup {
  readonly agentCount: number;
  readonly tokensPerTurn: number;
  readonly vocabularySize: number;
  readonly rounds: number;
  readonly family: string;
  readonly seed: number;
  readonly logitScale?: number;
}

/** A seeded game and a random initial team for tests. */
export function makeGame(setup: GameSetup): { game: TabularGame; team: TeamPolicy } {
  const random = createSeededRandom(setup.seed);
  const game = createGame(setup, gameFamilyByName(setup.family), random);
  return { game, team: randomTeamPolicy(game, random, setup.logitScale ?? 1) };
}

/** Probability of a whole transcript as the product of its token probabilities (no DP). */
export function transcriptProbability(
  game: TabularGame,
  team: TeamPolicy,
  transcript: number,
): number {
  let probability = 1;
  for (let position = 0; position < game.horizon; position++) {
    const entry = Math.floor(transcript / game.vocabularySize ** (game.horizon - position - 1));
    probability *= team.tables[position]!.probabilities[entry]!;
  }
  return probability;
}
