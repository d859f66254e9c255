import { ConfigError } from '../util/errors.js';

/**
 * A tabular shared-context turn-taking game (docs/method.md §1, §7).
 *
 * N agents speak in turn order 0, 1, …, N−1, for `rounds` rounds; in each turn the speaker emits
 * `tokensPerTurn` (T) tokens from a vocabulary of size V. The transcript is the sequence of all
 * H = N·rounds·T tokens; the team reward is a function of the whole transcript.
 *
 * Indexing. A position h ∈ [0, H) is the index of a token in the transcript; it belongs to the
 * agent `speakerAt(h)`. The state at position h is the prefix of the h tokens before it. Prefixes
 * of length h are numbered 0 … V^h − 1 by reading them as base-V numbers, first token most
 * significant, so the prefix `s` followed by token `a` is `s·V + a`. A complete transcript is a
 * prefix of length H, and `rewards[x]` is the reward of transcript `x`.
 */
export interface GameShape {
  readonly agentCount: number;
  readonly tokensPerTurn: number;
  readonly vocabularySize: number;
  readonly rounds: number;
}

export interface TabularGame extends GameShape {
  /** Name of the reward family the game was drawn from. */
  readonly family: string;
  /** H = agentCount · rounds · tokensPerTurn. */
  readonly horizon: number;
  /** Reward of every complete transcript. [V^H] */
  readonly rewards: Float64Array;
}

/**
 * Largest transcript space we enumerate: 2^22 transcripts keep one exact pass well under a
 * second and every per-depth table a few tens of megabytes.
 */
export const maxTranscripts = 2 ** 22;

export function horizonOf(shape: GameShape): number {
  return shape.agentCount * shape.rounds * shape.tokensPerTurn;
}

/** V^depth: the number of prefixes of length `depth`. */
export function prefixCount(shape: GameShape, depth: number): number {
  return shape.vocabularySize ** depth;
}

/** Index of the agent who emits the token at `position`. */
export function speakerAt(shape: GameShape, position: number): number {
  return Math.floor(position / shape.tokensPerTurn) % shape.agentCount;
}

/** Every position (ascending) at which `agent` emits a token, across all its turns. */
export function positionsOf(shape: GameShape, agent: number): number[] {
  const positions: number[] = [];
  const horizon = horizonOf(shape);
  for (let position = 0; position < horizon; position++) {
    if (speakerAt(shape, position) === agent) positions.push(position);
  }
  return positions;
}

/**
 * Checks that the shape is well formed and its transcript space is small enough to enumerate;
 * throws a ConfigError that says which knob to turn otherwise.
 */
export function validateGameShape(shape: GameShape): void {
  const integerFields: (keyof GameShape)[] = [
    'agentCount',
    'tokensPerTurn',
    'vocabularySize',
    'rounds',
  ];
  for (const field of integerFields) {
    if (!Number.isInteger(shape[field]) || shape[field] < 1) {
      throw new ConfigError(field, `must be a positive integer, got ${shape[field]}`);
    }
  }
  if (shape.vocabularySize < 2) {
    throw new ConfigError(
      'vocabularySize',
      'must be at least 2 (one token leaves nothing to learn)',
    );
  }
  const transcripts = shape.vocabularySize ** horizonOf(shape);
  if (transcripts > maxTranscripts) {
    throw new ConfigError(
      '',
      `the game with N=${shape.agentCount}, T=${shape.tokensPerTurn}, V=${shape.vocabularySize}, ` +
        `rounds=${shape.rounds} has V^(N·T·rounds) = ${transcripts} transcripts, more than the ` +
        `${maxTranscripts} that can be enumerated; lower N, T, V or rounds`,
    );
  }
}
