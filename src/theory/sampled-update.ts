import { analyzeTeam, computeOccupancy, totalVariation } from './exact.js';
import { positionsOf, prefixCount, type TabularGame } from './game.js';
import { prefixOf } from './monte-carlo.js';
import { tableFromLogits, withTables, type PositionTable, type TeamPolicy } from './policy.js';
import { trustRegionStep } from './trust-region.js';

/**
 * What a trainer sees of an update, reproduced in the tabular lab where the truth is known: the
 * team after some agents' exact trust-region steps, and per sampled transcript the log-ratio
 * log W of the changed tokens. The estimators of src/rl (occupancy gap, probabilistic
 * certificate) are checked against the exact values on these.
 */

/** `agents` updated one after another by the exact KL-δ step, each on fresh occupancy. */
export function updateAgents(
  game: TabularGame,
  team: TeamPolicy,
  agents: readonly number[],
  delta: number,
): TeamPolicy {
  let current = team;
  for (const agent of agents) {
    const analysis = analyzeTeam(game, current);
    const step = trustRegionStep({
      game,
      team: current,
      positions: positionsOf(game, agent),
      occupancy: analysis.occupancy,
      advantages: analysis.advantages,
      delta,
    });
    current = withTables(current, step.tables);
  }
  return current;
}

/** The table entry (prefix·V + token) of the token at `position` of a transcript. */
export function entryAt(game: TabularGame, transcript: number, position: number): number {
  return prefixOf(game, transcript, position + 1);
}

/** log W = Σ over `positions` of log π_next − log π_current at the transcript's tokens. */
export function logRatioOf(
  game: TabularGame,
  current: TeamPolicy,
  next: TeamPolicy,
  transcript: number,
  positions: readonly number[],
): number {
  let logRatio = 0;
  for (const position of positions) {
    const entry = entryAt(game, transcript, position);
    logRatio +=
      next.tables[position]!.logProbabilities[entry]! -
      current.tables[position]!.logProbabilities[entry]!;
  }
  return logRatio;
}

/** TV between the transcript distributions of two teams, by enumeration. */
export function transcriptTotalVariation(
  game: TabularGame,
  first: TeamPolicy,
  second: TeamPolicy,
): number {
  const horizon = game.horizon;
  return totalVariation(
    computeOccupancy(game, first)[horizon]!,
    computeOccupancy(game, second)[horizon]!,
  );
}

/** The team with every row of `agent`'s tables set to the probabilities `row`. */
export function withAgentRows(
  game: TabularGame,
  team: TeamPolicy,
  agent: number,
  row: readonly number[],
): TeamPolicy {
  if (row.length !== game.vocabularySize) {
    throw new RangeError(`a row needs ${game.vocabularySize} probabilities, got ${row.length}`);
  }
  const tables = new Map<number, PositionTable>();
  for (const position of positionsOf(game, agent)) {
    const logits = Float64Array.from(
      { length: prefixCount(game, position) * row.length },
      (_, entry) => Math.log(row[entry % row.length]!),
    );
    tables.set(position, tableFromLogits(logits, game.vocabularySize));
  }
  return withTables(team, tables);
}
