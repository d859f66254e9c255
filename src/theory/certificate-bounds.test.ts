import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { computeCertificate } from './certificate.js';
import {
  certificateBounds,
  pairwisePenalty,
  perStateTotalVariation,
  rewardRange,
  type CertificateBoundKey,
} from './certificate-bounds.js';
import { gameFamilyNames } from './families.js';
import { stageSchedules, turnOrder, type UpdateRecord } from './schedules.js';
import { makeGame } from './test-support/games.js';
import { certificateTolerance } from './tightness.js';

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-15, `${actual} vs ${expected}`);

/** L − certificate for one bound of one update. */
const penaltyOf = (update: UpdateRecord, key: CertificateBoundKey) =>
  update.certificate.surrogate - update.tighterCertificates[key];

test('per-state total variation is half the L1 distance of each row', () => {
  const first = Float64Array.of(0.5, 0.5, 1, 0, 0.2, 0.8);
  const second = Float64Array.of(0.5, 0.5, 0, 1, 0.5, 0.5);
  const tv = perStateTotalVariation(first, second, 2);
  close(tv[0]!, 0);
  close(tv[1]!, 1);
  close(tv[2]!, 0.3);
});

test('the reward range is the spread of the transcript rewards', () => {
  const { game } = makeGame({
    agentCount: 2,
    tokensPerTurn: 1,
    vocabularySize: 2,
    rounds: 1,
    family: 'random',
    seed: 7,
  });
  const rewards = [...game.rewards];
  close(rewardRange(game), Math.max(...rewards) - Math.min(...rewards));
});

test("with one bound for every position the pairwise penalty is certificate.ts's penalty", () => {
  const input = {
    surrogate: 0.5,
    advantageBound: 0.2,
    positions: [2, 3],
    ownShifts: [
      { position: 2, shift: 0.05 },
      { position: 3, shift: 0.07 },
    ],
    earlierShifts: [
      { position: 0, shift: 0.1 },
      { position: 4, shift: 0.3 },
    ],
    earlierAdvantageBounds: [
      { position: 0, bound: 0.2 },
      { position: 4, bound: 0.2 },
    ],
  };
  const reference = computeCertificate(input);
  // Hand count: own 3 sees 2 and 0; own 2 sees 0; drift at 4 sees 0, 2, 3 and twice 0.
  const expected = 2 * 0.2 * (0.1 + (0.05 + 0.1) + (0.05 + 0.07 + 0.1 + 0.1));
  const penalty = pairwisePenalty([
    { position: 0, own: false, bound: 0.2, shift: 0.1 },
    { position: 2, own: true, bound: 0.2, shift: 0.05 },
    { position: 3, own: true, bound: 0.2, shift: 0.07 },
    { position: 4, own: false, bound: 0.2, shift: 0.3 },
  ]);
  close(reference.penalty, expected);
  close(penalty, expected);
});

test('every certificate bounds |true − L| in every schedule and family; each is tighter than the last', () => {
  const updatesPerFamily = new Map<string, number>();
  fc.assert(
    fc.property(
      fc.record({
        agentCount: fc.integer({ min: 1, max: 4 }),
        tokensPerTurn: fc.integer({ min: 1, max: 3 }),
        vocabularySize: fc.integer({ min: 2, max: 3 }),
        rounds: fc.integer({ min: 1, max: 2 }),
        family: fc.constantFrom(...gameFamilyNames),
        seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        logitScale: fc.double({ min: 0.1, max: 3, noNaN: true }),
      }),
      fc.double({ min: 1e-4, max: 1, noNaN: true }),
      (setup, delta) => {
        fc.pre(
          setup.vocabularySize ** (setup.agentCount * setup.tokensPerTurn * setup.rounds) <= 4096,
        );
        const { game, team } = makeGame(setup);
        for (const schedule of stageSchedules) {
          const stage = schedule.runStage({ game, team, delta, order: turnOrder(game) });
          for (const update of stage.updates) {
            const tolerance = certificateTolerance(update);
            for (const { key } of certificateBounds) {
              // Both sides: the derivations bound |true − L|, not only true − L from below.
              assert.ok(
                update.surrogateError <= penaltyOf(update, key) + tolerance,
                `${schedule.name}, ${key}: |true − L| ${update.surrogateError} > penalty ${penaltyOf(update, key)}`,
              );
            }
            const chain: CertificateBoundKey[] = [
              'exactWeighted',
              'lmWeighted',
              'lmMaxState',
              'lmTotalVariation',
              'lmCurrent',
            ];
            for (let index = 1; index < chain.length; index++) {
              assert.ok(
                penaltyOf(update, chain[index - 1]!) <=
                  penaltyOf(update, chain[index]!) + tolerance,
                `${schedule.name}: ${chain[index - 1]} penalty above ${chain[index]}'s`,
              );
            }
            assert.ok(penaltyOf(update, 'current') <= penaltyOf(update, 'lmCurrent') + tolerance);
            updatesPerFamily.set(setup.family, (updatesPerFamily.get(setup.family) ?? 0) + 1);
          }
        }
      },
    ),
    { numRuns: 500, seed: 20261124 },
  );
  for (const family of gameFamilyNames) {
    assert.ok((updatesPerFamily.get(family) ?? 0) > 200, `${family}: too few updates checked`);
  }
});

test('the new penalties are second order in the step, the current one first order', () => {
  const { game, team } = makeGame({
    agentCount: 3,
    tokensPerTurn: 2,
    vocabularySize: 2,
    rounds: 1,
    family: 'dense',
    seed: 11,
  });
  const penalties = (delta: number) => {
    const stage = stageSchedules[0]!.runStage({ game, team, delta, order: turnOrder(game) });
    const last = stage.updates.at(-1)!;
    return {
      lmCurrent: penaltyOf(last, 'lmCurrent'),
      lmWeighted: penaltyOf(last, 'lmWeighted'),
      lmMaxState: penaltyOf(last, 'lmMaxState'),
    };
  };
  const large = penalties(1e-2);
  const small = penalties(1e-4);
  // δ is a KL, so the step (TV) shrinks like √δ: 10× here. First order: 10×; second: 100×.
  const shrink = (key: keyof typeof large) => large[key] / small[key];
  assert.ok(shrink('lmCurrent') > 7 && shrink('lmCurrent') < 14, `${shrink('lmCurrent')}`);
  assert.ok(shrink('lmWeighted') > 70, `${shrink('lmWeighted')}`);
  assert.ok(shrink('lmMaxState') > 70, `${shrink('lmMaxState')}`);
});

test('one token per agent under fresh occupancy: every penalty is 0 and every certificate exact', () => {
  const { game, team } = makeGame({
    agentCount: 3,
    tokensPerTurn: 1,
    vocabularySize: 3,
    rounds: 1,
    family: 'chain',
    seed: 5,
  });
  const stage = stageSchedules[0]!.runStage({ game, team, delta: 0.05, order: turnOrder(game) });
  for (const update of stage.updates) {
    for (const { key } of certificateBounds) {
      assert.equal(penaltyOf(update, key), 0, key);
      assert.ok(Math.abs(update.tighterCertificates[key] - update.trueImprovement) < 1e-12);
    }
  }
});
