import { ConfigError } from '../util/errors.js';
import {
  horizonOf,
  prefixCount,
  validateGameShape,
  type GameShape,
  type TabularGame,
} from './game.js';
import type { SeededRandom } from './random.js';

/**
 * A family of reward functions over transcripts. A family builds the reward of every complete
 * transcript of a given shape; random families draw from `random`, structured ones ignore it.
 */
export interface GameFamily {
  readonly name: string;
  readonly description: string;
  buildRewards(shape: GameShape, random: SeededRandom): Float64Array;
}

/**
 * The words of a transcript, one per turn: turn t's T tokens read as a base-V number. The
 * transcript index is base V with the first token most significant, so turn t's word is the
 * t-th base-V^T digit from the left.
 */
function turnWords(
  transcript: number,
  turnCount: number,
  wordBase: number,
  into: Int32Array,
): void {
  let rest = transcript;
  for (let turn = turnCount - 1; turn >= 0; turn--) {
    into[turn] = rest % wordBase;
    rest = Math.floor(rest / wordBase);
  }
}

function forEachTranscript(shape: GameShape, reward: (words: Int32Array) => number): Float64Array {
  const turnCount = shape.agentCount * shape.rounds;
  const wordBase = shape.vocabularySize ** shape.tokensPerTurn;
  const rewards = new Float64Array(prefixCount(shape, horizonOf(shape)));
  const words = new Int32Array(turnCount);
  for (let transcript = 0; transcript < rewards.length; transcript++) {
    turnWords(transcript, turnCount, wordBase, words);
    rewards[transcript] = reward(words);
  }
  return rewards;
}

/** Every transcript's reward drawn independently, uniform on [0, 1). */
const randomFamily: GameFamily = {
  name: 'random',
  description: 'i.i.d. uniform [0, 1) reward for every complete transcript',
  buildRewards(shape, random) {
    const rewards = new Float64Array(prefixCount(shape, horizonOf(shape)));
    for (let transcript = 0; transcript < rewards.length; transcript++) {
      rewards[transcript] = random.nextFloat();
    }
    return rewards;
  },
};

/**
 * A uniform [0, 1) reward for every turn, drawn independently for every history that ends with
 * that turn; the team reward is their sum (range [0, turns)). Every speaker's choice moves the
 * reward by O(1) however many agents follow, unlike `random`, where a turn's influence is diluted
 * by everything after it.
 */
const denseFamily: GameFamily = {
  name: 'dense',
  description: 'sum over turns of an i.i.d. uniform [0, 1) reward of the history up to that turn',
  buildRewards(shape, random) {
    const horizon = horizonOf(shape);
    const turnCount = shape.agentCount * shape.rounds;
    const turnTables: Float64Array[] = [];
    for (let turn = 0; turn < turnCount; turn++) {
      const table = new Float64Array(prefixCount(shape, (turn + 1) * shape.tokensPerTurn));
      for (let history = 0; history < table.length; history++) table[history] = random.nextFloat();
      turnTables.push(table);
    }
    const rewards = new Float64Array(prefixCount(shape, horizon));
    for (let transcript = 0; transcript < rewards.length; transcript++) {
      let total = 0;
      for (let turn = 0; turn < turnCount; turn++) {
        const remaining = horizon - (turn + 1) * shape.tokensPerTurn;
        total += turnTables[turn]![Math.floor(transcript / prefixCount(shape, remaining))]!;
      }
      rewards[transcript] = total;
    }
    return rewards;
  },
};

/** Reward 1 when every turn says the same word, 0 otherwise: pure coordination. */
const consensusFamily: GameFamily = {
  name: 'consensus',
  description: '1 if every turn emits the same T-token word, else 0',
  buildRewards(shape) {
    return forEachTranscript(shape, (words) => (words.every((word) => word === words[0]) ? 1 : 0));
  },
};

/** Count of consecutive turns that repeat the previous turn's word (range [0, turns − 1]). */
const chainFamily: GameFamily = {
  name: 'chain',
  description: 'number of turns that repeat the previous turn’s word',
  buildRewards(shape) {
    return forEachTranscript(shape, (words) => {
      let matches = 0;
      for (let turn = 1; turn < words.length; turn++)
        if (words[turn] === words[turn - 1]) matches++;
      return matches;
    });
  },
};

export const gameFamilies: Readonly<Record<string, GameFamily>> = {
  random: randomFamily,
  dense: denseFamily,
  consensus: consensusFamily,
  chain: chainFamily,
};

export const gameFamilyNames = Object.keys(gameFamilies) as readonly string[];

export function gameFamilyByName(name: string): GameFamily {
  const family = gameFamilies[name];
  if (!family) {
    throw new ConfigError(
      'family',
      `unknown game family "${name}" (valid: ${gameFamilyNames.join(', ')})`,
    );
  }
  return family;
}

/** Builds a game of the given shape from a family (validating the shape first). */
export function createGame(
  shape: GameShape,
  family: GameFamily,
  random: SeededRandom,
): TabularGame {
  validateGameShape(shape);
  return {
    agentCount: shape.agentCount,
    tokensPerTurn: shape.tokensPerTurn,
    vocabularySize: shape.vocabularySize,
    rounds: shape.rounds,
    family: family.name,
    horizon: horizonOf(shape),
    rewards: family.buildRewards(shape, random),
  };
}
