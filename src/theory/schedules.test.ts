import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { certificateTolerance } from './experiment.js';
import { expectedReturnOf } from './exact.js';
import {
  freshSchedule,
  jointSchedule,
  stageSchedules,
  staleSchedule,
  turnOrder,
} from './schedules.js';
import { makeGame } from './test-support/games.js';

const familyNames = ['random', 'dense', 'consensus', 'chain'];

test('the certificate never exceeds the true improvement, in any schedule, over many random games', () => {
  let updatesChecked = 0;
  fc.assert(
    fc.property(
      fc.record({
        agentCount: fc.integer({ min: 1, max: 4 }),
        tokensPerTurn: fc.integer({ min: 1, max: 3 }),
        vocabularySize: fc.integer({ min: 2, max: 3 }),
        rounds: fc.integer({ min: 1, max: 2 }),
        family: fc.constantFrom(...familyNames),
        seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        logitScale: fc.double({ min: 0.1, max: 3, noNaN: true }),
      }),
      fc.double({ min: 1e-3, max: 1, noNaN: true }),
      (setup, delta) => {
        fc.pre(
          setup.vocabularySize ** (setup.agentCount * setup.tokensPerTurn * setup.rounds) <= 4096,
        );
        const { game, team } = makeGame(setup);
        for (const schedule of stageSchedules) {
          const stage = schedule.runStage({ game, team, delta, order: turnOrder(game) });
          for (const update of stage.updates) {
            const excess = update.certificate.certificate - update.trueImprovement;
            assert.ok(
              excess <= certificateTolerance(update),
              `${schedule.name}, agents ${update.agents}: certificate ${update.certificate.certificate} > true ${update.trueImprovement}`,
            );
            // The derivation bounds |true − L| by the penalty on both sides.
            assert.ok(
              update.surrogateError <= update.certificate.penalty + certificateTolerance(update),
            );
            updatesChecked++;
          }
        }
      },
    ),
    { numRuns: 500, seed: 20260513 },
  );
  assert.ok(updatesChecked > 1000, `only ${updatesChecked} updates checked`);
});

test('with one agent every schedule makes the same update with the same numbers', () => {
  for (const family of familyNames) {
    const { game, team } = makeGame({
      agentCount: 1,
      tokensPerTurn: 3,
      vocabularySize: 2,
      rounds: 2,
      family,
      seed: 31,
    });
    const stages = stageSchedules.map((schedule) =>
      schedule.runStage({ game, team, delta: 0.05, order: [0] }),
    );
    const [reference, ...others] = stages.map((stage) => stage.updates);
    for (const updates of others) {
      assert.equal(updates.length, 1);
      const [update] = updates;
      assert.deepEqual(update!.certificate, reference![0]!.certificate);
      assert.equal(update!.trueImprovement, reference![0]!.trueImprovement);
      assert.equal(update!.steps[0]!.stepSize, reference![0]!.steps[0]!.stepSize);
    }
    for (const stage of stages.slice(1)) {
      stage.team.tables.forEach((table, position) =>
        assert.deepEqual(table, stages[0]!.team.tables[position]),
      );
    }
  }
});

test('fresh occupancy makes the surrogate exact when each agent has one token per stage', () => {
  const { game, team } = makeGame({
    agentCount: 4,
    tokensPerTurn: 1,
    vocabularySize: 3,
    rounds: 1,
    family: 'random',
    seed: 5,
  });
  const stage = freshSchedule.runStage({ game, team, delta: 0.1, order: turnOrder(game) });
  for (const update of stage.updates) {
    assert.ok(update.surrogateError < 1e-14);
    assert.equal(update.certificate.penalty, 0);
  }
  // Stale occupancy does not: later agents see shifted states.
  const stale = staleSchedule.runStage({ game, team, delta: 0.1, order: turnOrder(game) });
  assert.ok(stale.updates.slice(1).every((update) => update.surrogateError > 1e-8));
  assert.equal(stale.updates[0]!.surrogateError, stage.updates[0]!.surrogateError);
});

test('the stale sequential stage ends where the joint step does, and improvements telescope', () => {
  const { game, team } = makeGame({
    agentCount: 3,
    tokensPerTurn: 2,
    vocabularySize: 2,
    rounds: 2,
    family: 'dense',
    seed: 12,
  });
  const input = { game, team, delta: 0.02, order: turnOrder(game) };
  const stale = staleSchedule.runStage(input);
  const joint = jointSchedule.runStage(input);
  stale.team.tables.forEach((table, position) =>
    assert.deepEqual(table, joint.team.tables[position]),
  );
  const total = stale.updates.reduce((sum, update) => sum + update.trueImprovement, 0);
  assert.ok(Math.abs(total - joint.updates[0]!.trueImprovement) < 1e-13);
  const fresh = freshSchedule.runStage(input);
  const freshTotal = fresh.updates.reduce((sum, update) => sum + update.trueImprovement, 0);
  assert.ok(
    Math.abs(freshTotal - (expectedReturnOf(game, fresh.team) - fresh.returnBefore)) < 1e-13,
  );
  // Over two rounds earlier agents also speak after later ones: the drift term is in play.
  assert.ok(stale.updates.slice(1).some((update) => update.certificate.advantageDriftPenalty > 0));
  assert.ok(stale.updates.every((update) => update.steps[0]!.reachedDelta));
});

test('stale steps meet δ under the start-of-stage occupancy, not the one they are applied to', () => {
  const { game, team } = makeGame({
    agentCount: 4,
    tokensPerTurn: 2,
    vocabularySize: 2,
    rounds: 1,
    family: 'chain',
    seed: 8,
  });
  const delta = 0.05;
  const stale = staleSchedule.runStage({ game, team, delta, order: turnOrder(game) });
  for (const update of stale.updates) assert.ok(Math.abs(update.steps[0]!.tokenKl - delta) < 1e-12);
  assert.ok(
    stale.updates
      .slice(1)
      .some((update) => Math.abs(update.steps[0]!.tokenKlOnAppliedTeam - delta) > 1e-6),
  );
  const fresh = freshSchedule.runStage({ game, team, delta, order: turnOrder(game) });
  for (const update of fresh.updates)
    assert.ok(Math.abs(update.steps[0]!.tokenKlOnAppliedTeam - delta) < 1e-12);
  // The occupancy gap is what separates them: nil for the first stale update and for fresh ones.
  assert.equal(stale.updates[0]!.occupancyGap, 0);
  assert.ok(stale.updates.slice(1).every((update) => update.occupancyGap > 1e-4));
  assert.ok(fresh.updates.every((update) => update.occupancyGap === 0));
});

test('an update order naming a missing agent is refused', () => {
  const { game, team } = makeGame({
    agentCount: 2,
    tokensPerTurn: 1,
    vocabularySize: 2,
    rounds: 1,
    family: 'random',
    seed: 1,
  });
  for (const schedule of stageSchedules) {
    assert.throws(
      () => schedule.runStage({ game, team, delta: 0.01, order: [0, 2] }),
      /agents are 0 … 1/,
    );
  }
});
