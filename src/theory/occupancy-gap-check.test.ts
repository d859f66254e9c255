import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mean, standardError } from '../rl/index.js';
import { positionsOf, prefixCount } from './game.js';
import { occupancyGapTrials } from './occupancy-gap-check.js';
import { tableFromLogits, withTables, type PositionTable, type TeamPolicy } from './policy.js';
import { createSeededRandom } from './random.js';
import { updateAgents } from './sampled-update.js';
import { makeGame } from './test-support/games.js';

/** Every row of agent `agent`'s tables set to probabilities `row` (heavy tails on demand). */
function withRows(
  game: ReturnType<typeof makeGame>['game'],
  team: TeamPolicy,
  agent: number,
  row: readonly number[],
): TeamPolicy {
  const tables = new Map<number, PositionTable>();
  for (const position of positionsOf(game, agent)) {
    const rows = prefixCount(game, position);
    const logits = Float64Array.from({ length: rows * row.length }, (_, entry) =>
      Math.log(row[entry % row.length]!),
    );
    tables.set(position, tableFromLogits(logits, game.vocabularySize));
  }
  return withTables(team, tables);
}

describe('the occupancy gap in the tabular lab, against the exact total variation', () => {
  test('trust-region updates: unbiased, in [0, 1], the interval covers at its stated rate', () => {
    let trialsRun = 0;
    let covered = 0;
    for (const [family, seed, vocabularySize] of [
      ['random', 1, 2],
      ['dense', 2, 2],
      ['chain', 3, 3],
      ['consensus', 4, 2],
    ] as const) {
      const { game, team } = makeGame({
        agentCount: 3,
        tokensPerTurn: 2,
        vocabularySize,
        rounds: 1,
        family,
        seed,
      });
      const current = updateAgents(game, team, [0, 1], 0.05);
      const trials = occupancyGapTrials({
        game,
        stale: team,
        current,
        earlierAgents: [0, 1],
        trajectories: 64,
        trials: 150,
        alpha: 0.1,
        random: createSeededRandom(seed),
      });
      assert.ok(trials.exact > 0.05, `${family}: the update moved the team (${trials.exact})`);
      assert.ok(trials.estimates.every((gap) => gap >= 0 && gap <= 1));
      const bias = mean(trials.estimates) - trials.exact;
      assert.ok(
        Math.abs(bias) < 4 * standardError(trials.estimates),
        `${family}: mean ${mean(trials.estimates)} vs exact ${trials.exact}`,
      );
      trialsRun += trials.estimates.length;
      covered += trials.covered;
    }
    // Stated rate 90%; binomial simulation error of 600 trials is 1.2 points.
    assert.ok(
      covered / trialsRun >= 0.9 - 3 * Math.sqrt((0.9 * 0.1) / trialsRun),
      `${covered}/${trialsRun}`,
    );
  });

  test('heavy-tailed W: ½·mean|W − 1| passes 1, the total-variation estimate stays exact', () => {
    const { game, team } = makeGame({
      agentCount: 3,
      tokensPerTurn: 2,
      vocabularySize: 2,
      rounds: 1,
      family: 'random',
      seed: 7,
    });
    // Agent 0 takes token 0 with probability 0.02 before the update and 0.5 after: W reaches 625.
    const stale = withRows(game, team, 0, [0.02, 0.98]);
    const current = withRows(game, team, 0, [0.5, 0.5]);
    const trials = occupancyGapTrials({
      game,
      stale,
      current,
      earlierAgents: [0],
      trajectories: 64,
      trials: 400,
      alpha: 0.1,
      random: createSeededRandom(11),
    });
    // Agent 0's two tokens are i.i.d. under both teams: TV = Σ (Q − P)_+ over the 4 token pairs.
    const pairs = [
      [0.02 * 0.02, 0.25],
      [0.02 * 0.98, 0.25],
      [0.98 * 0.02, 0.25],
      [0.98 * 0.98, 0.25],
    ];
    const exact = pairs.reduce((total, [q, p]) => total + Math.max(0, q! - p!), 0);
    assert.ok(Math.abs(trials.exact - exact) < 1e-12, `${trials.exact} vs ${exact}`);
    assert.ok(
      Math.max(...trials.halfAbsoluteDeviations) > 1,
      `the older estimator's largest reading ${Math.max(...trials.halfAbsoluteDeviations)}`,
    );
    assert.ok(trials.estimates.every((gap) => gap >= 0 && gap <= 1));
    const bias = mean(trials.estimates) - exact;
    assert.ok(Math.abs(bias) < 4 * standardError(trials.estimates), `bias ${bias}`);
    assert.ok(trials.covered / 400 >= 0.9 - 3 * Math.sqrt((0.9 * 0.1) / 400));
  });
});
