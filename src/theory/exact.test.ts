import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  analyzeTeam,
  expectation,
  expectedReturnOf,
  perStateKl,
  policyAdvantage,
  tokenLevelKl,
  totalVariation,
  trueImprovementOf,
} from './exact.js';
import { positionsOf, prefixCount } from './game.js';
import {
  estimateActionValue,
  estimateImprovementOffPolicy,
  estimateOccupancy,
  estimateReturn,
  estimateSurrogate,
  type Estimate,
} from './monte-carlo.js';
import { tableFromLogits, withTables } from './policy.js';
import { createSeededRandom } from './random.js';
import { makeGame, transcriptProbability } from './test-support/games.js';
import { trustRegionStep } from './trust-region.js';

const shapes = [
  { agentCount: 1, tokensPerTurn: 3, vocabularySize: 2, rounds: 1 },
  { agentCount: 3, tokensPerTurn: 1, vocabularySize: 3, rounds: 1 },
  { agentCount: 2, tokensPerTurn: 2, vocabularySize: 2, rounds: 2 },
];

/** |exact − estimate| within 4.5 standard errors (seeded, so the verdict is reproducible). */
function assertWithinErrorBars(exact: number, estimated: Estimate, what: string): void {
  const allowance = 4.5 * estimated.standardError + 1e-12;
  assert.ok(
    Math.abs(exact - estimated.mean) <= allowance,
    `${what}: exact ${exact} vs Monte Carlo ${estimated.mean} ± ${estimated.standardError}`,
  );
}

test('dynamic programming matches brute-force enumeration of transcripts', () => {
  for (const [index, shape] of shapes.entries()) {
    for (const family of ['random', 'dense', 'chain']) {
      const { game, team } = makeGame({ ...shape, family, seed: 100 + index });
      const analysis = analyzeTeam(game, team);
      let expected = 0;
      for (let transcript = 0; transcript < game.rewards.length; transcript++) {
        const probability = transcriptProbability(game, team, transcript);
        assert.ok(Math.abs(analysis.occupancy[game.horizon]![transcript]! - probability) < 1e-15);
        expected += probability * game.rewards[transcript]!;
      }
      assert.ok(Math.abs(analysis.expectedReturn - expected) < 1e-12);
      assert.ok(Math.abs(expectedReturnOf(game, team) - expected) < 1e-12);
    }
  }
});

test('occupancies are distributions and advantages average to zero under the policy', () => {
  for (const [index, shape] of shapes.entries()) {
    const { game, team } = makeGame({ ...shape, family: 'random', seed: 200 + index });
    const analysis = analyzeTeam(game, team);
    for (let depth = 0; depth <= game.horizon; depth++) {
      const total = analysis.occupancy[depth]!.reduce((sum, value) => sum + value, 0);
      assert.ok(Math.abs(total - 1) < 1e-12);
      assert.equal(analysis.occupancy[depth]!.length, prefixCount(game, depth));
    }
    for (let position = 0; position < game.horizon; position++) {
      const mean = policyAdvantage(
        team.tables[position]!,
        analysis.advantages[position]!,
        game.vocabularySize,
      );
      for (const value of mean) assert.ok(Math.abs(value) < 1e-12);
    }
  }
});

test('the performance-difference identity holds exactly for any change of one agent', () => {
  const { game, team } = makeGame({
    agentCount: 3,
    tokensPerTurn: 2,
    vocabularySize: 2,
    rounds: 1,
    family: 'random',
    seed: 3,
  });
  const random = createSeededRandom(9);
  const positions = positionsOf(game, 1);
  const replacements = new Map(
    positions.map((position) => {
      const logits = Float64Array.from(
        team.tables[position]!.logProbabilities,
        (value) => value + random.nextNormal(),
      );
      return [position, tableFromLogits(logits, game.vocabularySize)] as const;
    }),
  );
  const changed = withTables(team, replacements);
  const before = analyzeTeam(game, team);
  const after = analyzeTeam(game, changed);
  let predicted = 0;
  for (const position of positions) {
    const gain = policyAdvantage(
      changed.tables[position]!,
      before.advantages[position]!,
      game.vocabularySize,
    );
    predicted += expectation(after.occupancy[position]!, gain);
  }
  assert.ok(Math.abs(after.expectedReturn - before.expectedReturn - predicted) < 1e-12);
  assert.ok(Math.abs(trueImprovementOf(game, team, replacements) - predicted) < 1e-12);
  // The occupancy before agent 1's first token is untouched; after it, it moved.
  assert.ok(
    totalVariation(after.occupancy[positions[0]!]!, before.occupancy[positions[0]!]!) < 1e-15,
  );
  assert.ok(
    totalVariation(after.occupancy[positions[1]!]!, before.occupancy[positions[1]!]!) > 1e-3,
  );
});

test('exact J, occupancy, Q, surrogate and true improvement match Monte Carlo within error bars', () => {
  const { game, team } = makeGame({
    agentCount: 3,
    tokensPerTurn: 2,
    vocabularySize: 2,
    rounds: 1,
    family: 'dense',
    seed: 17,
  });
  const analysis = analyzeTeam(game, team);
  const random = createSeededRandom(2024);
  const samples = 40_000;
  assertWithinErrorBars(analysis.expectedReturn, estimateReturn(game, team, random, samples), 'J');
  for (const at of [
    { depth: 2, prefix: 1 },
    { depth: 4, prefix: 9 },
    { depth: 6, prefix: 42 },
  ]) {
    const exact = analysis.occupancy[at.depth]![at.prefix]!;
    assertWithinErrorBars(
      exact,
      estimateOccupancy(game, team, random, samples, at),
      `d_${at.depth}(${at.prefix})`,
    );
  }
  for (const at of [
    { position: 0, prefix: 0, token: 1 },
    { position: 3, prefix: 5, token: 0 },
    { position: 5, prefix: 30, token: 1 },
  ]) {
    const exact = analysis.values[at.position + 1]![at.prefix * game.vocabularySize + at.token]!;
    assertWithinErrorBars(
      exact,
      estimateActionValue(game, team, random, 5000, at),
      `Q_${at.position}`,
    );
  }
  const positions = positionsOf(game, 1);
  const step = trustRegionStep({
    game,
    team,
    positions,
    occupancy: analysis.occupancy,
    advantages: analysis.advantages,
    delta: 0.05,
  });
  const updated = withTables(team, step.tables);
  const trueImprovement = expectedReturnOf(game, updated) - analysis.expectedReturn;
  let surrogate = 0;
  for (const position of positions) {
    const gain = policyAdvantage(
      updated.tables[position]!,
      analysis.advantages[position]!,
      game.vocabularySize,
    );
    surrogate += expectation(analysis.occupancy[position]!, gain);
  }
  assertWithinErrorBars(
    surrogate,
    estimateSurrogate(game, team, updated, analysis.advantages, positions, random, samples),
    'surrogate',
  );
  assertWithinErrorBars(
    trueImprovement,
    estimateImprovementOffPolicy(game, team, updated, positions, random, samples),
    'true improvement (off-policy)',
  );
  const before = estimateReturn(game, team, random, samples);
  const after = estimateReturn(game, updated, random, samples);
  assertWithinErrorBars(
    trueImprovement,
    {
      mean: after.mean - before.mean,
      standardError: Math.hypot(after.standardError, before.standardError),
      samples,
    },
    'true improvement (two samples)',
  );
});

test('exact KL is zero for identical tables and the token-level KL averages over positions', () => {
  const { game, team } = makeGame({
    agentCount: 2,
    tokensPerTurn: 2,
    vocabularySize: 3,
    rounds: 1,
    family: 'random',
    seed: 8,
  });
  const analysis = analyzeTeam(game, team);
  for (const value of perStateKl(team.tables[1]!, team.tables[1]!, 3)) assert.equal(value, 0);
  // Hand-computed KL of one row: old (1/2, 1/4, 1/4) against new (1/4, 1/2, 1/4).
  const old = tableFromLogits(Float64Array.from([Math.log(2), 0, 0]), 3);
  const next = tableFromLogits(Float64Array.from([0, Math.log(2), 0]), 3);
  const expected = 0.5 * Math.log(2) + 0.25 * Math.log(0.5);
  assert.ok(Math.abs(perStateKl(old, next, 3)[0]! - expected) < 1e-15);
  const positions = positionsOf(game, 0);
  const shifted = withTables(team, new Map([[0, next]]));
  const klAtFirst = expectation(analysis.occupancy[0]!, perStateKl(team.tables[0]!, next, 3));
  assert.ok(
    Math.abs(tokenLevelKl(game, analysis.occupancy, team, shifted, positions) - klAtFirst / 2) <
      1e-15,
  );
});
