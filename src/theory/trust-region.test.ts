import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { analyzeTeam, expectation, policyAdvantage, tokenLevelKl } from './exact.js';
import { createGame, gameFamilies } from './families.js';
import { positionsOf } from './game.js';
import { tableFromLogits, withTables, type PositionTable } from './policy.js';
import { createSeededRandom } from './random.js';
import { makeGame } from './test-support/games.js';
import { trustRegionStep } from './trust-region.js';

test('the step lands on token-level KL δ, measured independently', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 1, max: 2 }),
      fc.integer({ min: 2, max: 3 }),
      fc.double({ min: 1e-4, max: 2, noNaN: true }),
      fc.integer({ min: 0, max: 1_000_000 }),
      (agentCount, tokensPerTurn, vocabularySize, delta, seed) => {
        const { game, team } = makeGame({
          agentCount,
          tokensPerTurn,
          vocabularySize,
          rounds: 1,
          family: 'random',
          seed,
        });
        const analysis = analyzeTeam(game, team);
        const agent = seed % agentCount;
        const positions = positionsOf(game, agent);
        const step = trustRegionStep({
          game,
          team,
          positions,
          occupancy: analysis.occupancy,
          advantages: analysis.advantages,
          delta,
        });
        assert.ok(step.reachedDelta);
        assert.ok(step.stepSize > 0);
        const measured = tokenLevelKl(
          game,
          analysis.occupancy,
          team,
          withTables(team, step.tables),
          positions,
        );
        assert.ok(Math.abs(measured - delta) <= 1e-9 * delta, `KL ${measured} vs δ ${delta}`);
      },
    ),
    { numRuns: 60 },
  );
});

function surrogateOf(
  game: ReturnType<typeof makeGame>['game'],
  analysis: ReturnType<typeof analyzeTeam>,
  tables: ReadonlyMap<number, PositionTable>,
): number {
  let total = 0;
  for (const [position, table] of tables) {
    total += expectation(
      analysis.occupancy[position]!,
      policyAdvantage(table, analysis.advantages[position]!, game.vocabularySize),
    );
  }
  return total;
}

test('for a small δ the natural-gradient step beats random directions of the same KL', () => {
  const { game, team } = makeGame({
    agentCount: 2,
    tokensPerTurn: 2,
    vocabularySize: 3,
    rounds: 1,
    family: 'dense',
    seed: 4,
  });
  const analysis = analyzeTeam(game, team);
  const positions = positionsOf(game, 1);
  const delta = 1e-4;
  const step = trustRegionStep({
    game,
    team,
    positions,
    occupancy: analysis.occupancy,
    advantages: analysis.advantages,
    delta,
  });
  const best = surrogateOf(game, analysis, step.tables);
  assert.ok(best > 0);
  const random = createSeededRandom(77);
  for (let trial = 0; trial < 30; trial++) {
    // A random logit direction, scaled (by bisection) to the same token-level KL.
    const directions = new Map(
      positions.map((position) => [
        position,
        Float64Array.from(team.tables[position]!.logProbabilities, () => random.nextNormal()),
      ]),
    );
    const tablesAt = (scale: number) =>
      new Map(
        positions.map((position) => {
          const base = team.tables[position]!.logProbabilities;
          const direction = directions.get(position)!;
          return [
            position,
            tableFromLogits(
              Float64Array.from(base, (value, entry) => value + scale * direction[entry]!),
              game.vocabularySize,
            ),
          ] as const;
        }),
      );
    const klAt = (scale: number) =>
      tokenLevelKl(game, analysis.occupancy, team, withTables(team, tablesAt(scale)), positions);
    let low = 0;
    let high = 1;
    while (klAt(high) < delta) high *= 2;
    for (let iteration = 0; iteration < 80; iteration++) {
      const middle = (low + high) / 2;
      if (klAt(middle) < delta) low = middle;
      else high = middle;
    }
    const other = surrogateOf(game, analysis, tablesAt(low));
    assert.ok(other < best, `random direction ${trial}: ${other} ≥ ${best}`);
  }
});

test('when no action matters there is no step to take', () => {
  const shape = { agentCount: 2, tokensPerTurn: 1, vocabularySize: 2, rounds: 1 };
  const base = createGame(shape, gameFamilies.random!, createSeededRandom(1));
  const game = { ...base, rewards: new Float64Array(base.rewards.length).fill(0.3) };
  const { team } = makeGame({ ...shape, family: 'random', seed: 1 });
  const analysis = analyzeTeam(game, team);
  const step = trustRegionStep({
    game,
    team,
    positions: [1],
    occupancy: analysis.occupancy,
    advantages: analysis.advantages,
    delta: 0.01,
  });
  assert.equal(step.reachedDelta, false);
  assert.equal(step.stepSize, 0);
  assert.deepEqual(step.tables.get(1)!.probabilities, team.tables[1]!.probabilities);
});
