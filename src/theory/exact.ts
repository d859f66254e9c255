import { prefixCount, type TabularGame } from './game.js';
import { withTables, type PositionTable, type TeamPolicy } from './policy.js';

/**
 * Exact quantities of a team in a tabular game, by dynamic programming over prefixes (the
 * prefix tree has Σ_h V^h nodes; every pass below visits each edge once).
 *
 *   occupancy   d_0(∅) = 1,   d_{h+1}(s·a) = d_h(s) π_h(a|s)
 *   values      V_H(x) = R(x),   V_h(s) = Σ_a π_h(a|s) V_{h+1}(s·a)
 *   Q and A     Q_h(s,a) = V_{h+1}(s·a),   A_h(s,a) = Q_h(s,a) − V_h(s)
 *   return      J = V_0(∅) = Σ_x d_H(x) R(x)
 *
 * There is no discount and no intermediate reward: the episode is the transcript, so Q at a
 * position is simply the value of the longer prefix.
 */
export interface ExactAnalysis {
  /** d_h over prefixes of length h, for h = 0 … H (d_H is the transcript distribution). [V^h] */
  readonly occupancy: readonly Float64Array[];
  /** V_h over prefixes of length h, for h = 0 … H (V_H are the rewards). [V^h] */
  readonly values: readonly Float64Array[];
  /** A_h(s, a) for positions h = 0 … H−1; Q_h(s, a) is values[h + 1][s·V + a]. [V^h × V] */
  readonly advantages: readonly Float64Array[];
  /** J = E[R]. */
  readonly expectedReturn: number;
}

export function computeOccupancy(game: TabularGame, team: TeamPolicy): Float64Array[] {
  const occupancy: Float64Array[] = [Float64Array.of(1)];
  for (let position = 0; position < game.horizon; position++) {
    const current = occupancy[position]!;
    const probabilities = team.tables[position]!.probabilities;
    const next = new Float64Array(probabilities.length);
    for (let entry = 0; entry < next.length; entry++) {
      next[entry] = current[Math.floor(entry / game.vocabularySize)]! * probabilities[entry]!;
    }
    occupancy.push(next);
  }
  return occupancy;
}

export function computeValues(game: TabularGame, team: TeamPolicy): Float64Array[] {
  const values: Float64Array[] = new Array<Float64Array>(game.horizon + 1);
  values[game.horizon] = game.rewards;
  const vocabularySize = game.vocabularySize;
  for (let position = game.horizon - 1; position >= 0; position--) {
    const next = values[position + 1]!;
    const probabilities = team.tables[position]!.probabilities;
    const current = new Float64Array(prefixCount(game, position));
    for (let state = 0; state < current.length; state++) {
      let total = 0;
      for (let token = 0; token < vocabularySize; token++) {
        const entry = state * vocabularySize + token;
        total += probabilities[entry]! * next[entry]!;
      }
      current[state] = total;
    }
    values[position] = current;
  }
  return values;
}

export function computeAdvantages(
  game: TabularGame,
  values: readonly Float64Array[],
): Float64Array[] {
  const advantages: Float64Array[] = [];
  for (let position = 0; position < game.horizon; position++) {
    const actionValues = values[position + 1]!;
    const stateValues = values[position]!;
    const advantage = new Float64Array(actionValues.length);
    for (let entry = 0; entry < advantage.length; entry++) {
      advantage[entry] =
        actionValues[entry]! - stateValues[Math.floor(entry / game.vocabularySize)]!;
    }
    advantages.push(advantage);
  }
  return advantages;
}

/** Occupancy, values, advantages and J of `team`. */
export function analyzeTeam(game: TabularGame, team: TeamPolicy): ExactAnalysis {
  const values = computeValues(game, team);
  return {
    occupancy: computeOccupancy(game, team),
    values,
    advantages: computeAdvantages(game, values),
    expectedReturn: values[0]![0]!,
  };
}

/** J(team) alone (one backward pass). */
export function expectedReturnOf(game: TabularGame, team: TeamPolicy): number {
  return computeValues(game, team)[0]![0]!;
}

/** The true improvement J(team with `replacements`) − J(team) of any change of tables. */
export function trueImprovementOf(
  game: TabularGame,
  team: TeamPolicy,
  replacements: ReadonlyMap<number, PositionTable>,
): number {
  return expectedReturnOf(game, withTables(team, replacements)) - expectedReturnOf(game, team);
}

/** KL(π_old(·|s) ‖ π_new(·|s)) for every prefix s of one position. [V^h] */
export function perStateKl(
  oldTable: PositionTable,
  newTable: PositionTable,
  vocabularySize: number,
): Float64Array {
  const kl = new Float64Array(oldTable.probabilities.length / vocabularySize);
  for (let state = 0; state < kl.length; state++) {
    let total = 0;
    for (let token = 0; token < vocabularySize; token++) {
      const entry = state * vocabularySize + token;
      total +=
        oldTable.probabilities[entry]! *
        (oldTable.logProbabilities[entry]! - newTable.logProbabilities[entry]!);
    }
    // Rounding can leave a KL of identical rows at −1e−17; KL is non-negative.
    kl[state] = Math.max(0, total);
  }
  return kl;
}

/** Ā(s) = Σ_a π(a|s) A(s, a) for every prefix s of one position. [V^h] */
export function policyAdvantage(
  table: PositionTable,
  advantages: Float64Array,
  vocabularySize: number,
): Float64Array {
  const result = new Float64Array(advantages.length / vocabularySize);
  for (let state = 0; state < result.length; state++) {
    let total = 0;
    for (let token = 0; token < vocabularySize; token++) {
      const entry = state * vocabularySize + token;
      total += table.probabilities[entry]! * advantages[entry]!;
    }
    result[state] = total;
  }
  return result;
}

/** E_{s∼d}[f(s)] = Σ_s d(s) f(s). */
export function expectation(distribution: Float64Array, perState: Float64Array): number {
  let total = 0;
  for (let state = 0; state < distribution.length; state++)
    total += distribution[state]! * perState[state]!;
  return total;
}

/** E_{s∼d}[√(f(s) / 2)]: the Pinsker bound on the expected total variation when f is a KL. */
export function expectedSqrtHalf(distribution: Float64Array, perState: Float64Array): number {
  let total = 0;
  for (let state = 0; state < distribution.length; state++) {
    total += distribution[state]! * Math.sqrt(perState[state]! / 2);
  }
  return total;
}

/**
 * Token-level KL of a change at `positions` (docs/method.md §3): the mean over those positions of
 * E_{s∼d_h}[KL(π_old(·|s) ‖ π_new(·|s))], d the occupancy the update is measured under.
 */
export function tokenLevelKl(
  game: TabularGame,
  occupancy: readonly Float64Array[],
  oldTeam: TeamPolicy,
  newTeam: TeamPolicy,
  positions: readonly number[],
): number {
  let total = 0;
  for (const position of positions) {
    const kl = perStateKl(
      oldTeam.tables[position]!,
      newTeam.tables[position]!,
      game.vocabularySize,
    );
    total += expectation(occupancy[position]!, kl);
  }
  return positions.length === 0 ? 0 : total / positions.length;
}

/** Total variation between two distributions over the same finite set. */
export function totalVariation(first: Float64Array, second: Float64Array): number {
  let total = 0;
  for (let index = 0; index < first.length; index++)
    total += Math.abs(first[index]! - second[index]!);
  return total / 2;
}
