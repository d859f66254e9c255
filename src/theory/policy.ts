import { prefixCount, type GameShape } from './game.js';
import type { SeededRandom } from './random.js';

/**
 * The softmax table used at one token position h: a row per prefix of length h, a column per
 * token. Agent i's policy is the set of tables at its positions (`positionsOf`); within a row,
 * probabilities sum to one and every probability is positive, so every prefix is reachable.
 */
export interface PositionTable {
  /** log π(a | s), normalized rows. [V^h × V] */
  readonly logProbabilities: Float64Array;
  /** π(a | s) = exp(logProbabilities). [V^h × V] */
  readonly probabilities: Float64Array;
}

/** The whole team's policy: one table per position 0 … H−1. Tables are never mutated. */
export interface TeamPolicy {
  readonly tables: readonly PositionTable[];
}

/** Normalizes each row of unnormalized log-weights ("logits") into a table (log-sum-exp). */
export function tableFromLogits(logits: Float64Array, vocabularySize: number): PositionTable {
  const logProbabilities = new Float64Array(logits.length);
  const probabilities = new Float64Array(logits.length);
  for (let rowStart = 0; rowStart < logits.length; rowStart += vocabularySize) {
    let largest = -Infinity;
    for (let token = 0; token < vocabularySize; token++) {
      largest = Math.max(largest, logits[rowStart + token]!);
    }
    let total = 0;
    for (let token = 0; token < vocabularySize; token++) {
      total += Math.exp(logits[rowStart + token]! - largest);
    }
    const logNormalizer = largest + Math.log(total);
    for (let token = 0; token < vocabularySize; token++) {
      const logProbability = logits[rowStart + token]! - logNormalizer;
      logProbabilities[rowStart + token] = logProbability;
      probabilities[rowStart + token] = Math.exp(logProbability);
    }
  }
  return { logProbabilities, probabilities };
}

/** A team whose every logit is drawn i.i.d. from N(0, logitScale²). */
export function randomTeamPolicy(
  shape: GameShape & { readonly horizon: number },
  random: SeededRandom,
  logitScale: number,
): TeamPolicy {
  const tables: PositionTable[] = [];
  for (let position = 0; position < shape.horizon; position++) {
    const logits = new Float64Array(prefixCount(shape, position) * shape.vocabularySize);
    for (let entry = 0; entry < logits.length; entry++) {
      logits[entry] = logitScale * random.nextNormal();
    }
    tables.push(tableFromLogits(logits, shape.vocabularySize));
  }
  return { tables };
}

/** A new team with the tables at the given positions replaced; the rest are shared. */
export function withTables(
  team: TeamPolicy,
  replacements: ReadonlyMap<number, PositionTable>,
): TeamPolicy {
  return { tables: team.tables.map((table, position) => replacements.get(position) ?? table) };
}
