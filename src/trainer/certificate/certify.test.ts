import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import type { CertificateEvidence } from '../update/engine.js';
import { certificateBounds, tokenHorizon } from './certify.js';
import type { UnitTokens } from '../update/token-grid.js';

/** The fields certificateBounds reads: each trajectory's reward and prompt group. */
function batchOf(rewards: number[]): TeamBatch {
  const trajectories = rewards.map((reward) => ({ reward, problemIndex: 0 }));
  return { trajectories } as unknown as TeamBatch;
}

/** Two rows of two agent tokens each, both sampled at probability ½. */
function evidence(newProbabilities: number[], totalVariation: number[]): CertificateEvidence {
  const tokens: UnitTokens = {
    rows: 2,
    length: 2,
    rowTrajectories: [0, 1],
    mask: Float32Array.from([1, 1, 1, 1]),
    oldLogProbs: new Float32Array(4).fill(Math.log(0.5)),
    items: [],
    gridIndex: Int32Array.from([0, 1, 2, 3]),
    totalTokens: 4,
    sampledHidden: [],
  };
  return {
    tokens,
    newLogProbs: Float32Array.from(newProbabilities.map(Math.log)),
    perTokenKl: Float32Array.from(totalVariation.map((value) => 2 * value * value)),
    perTokenTotalVariation: Float32Array.from(totalVariation),
  };
}

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-6, `${actual} ≉ ${expected}`);

describe('certificateBounds', () => {
  test('a hand-computed update: both bounds and the stale term', () => {
    // Rewards 1 and 0 in one group: leave-one-out advantages +1 and −1.
    // Surrogate: row 0 (1.2 − 1)·2 = 0.4, row 1 −(0.8 − 1) = 0.2, mean 0.3.
    // First order, horizon 3 (√(KL/2) = TV here): row 0 2·0.1 + 1·0.1, row 1 2·0.1 → mean 0.25,
    // times 2ε. Second order: only row 0's second token has W ≠ 1: |1.2 − 1|·0.1 = 0.02 → 0.01.
    const bounds = certificateBounds(
      batchOf([1, 0]),
      evidence([0.6, 0.6, 0.4, 0.5], [0.1, 0.1, 0.1, 0]),
      { epsilon: 1, earlierShifts: [0.05], horizon: 3 },
    );
    close(bounds.surrogate, 0.3);
    close(bounds.penalty, 0.5);
    close(bounds.stalePenalty, 0.1);
    close(bounds.certificate, 0.3 - 0.5 - 0.1);
    close(bounds.secondOrderPenalty, 0.01);
    close(bounds.secondOrderCertificate, 0.3 - 0.01 - 0.1);
  });

  test('an update that changed nothing is certified at exactly 0', () => {
    const bounds = certificateBounds(
      batchOf([1, 0]),
      evidence([0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]),
      { epsilon: 1, earlierShifts: [], horizon: 2 },
    );
    assert.equal(bounds.certificate, 0);
    assert.equal(bounds.secondOrderCertificate, 0);
  });

  test('a row longer than the horizon is an error, not a silent estimate', () => {
    assert.throws(
      () =>
        certificateBounds(batchOf([1, 0]), evidence([0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]), {
          epsilon: 1,
          earlierShifts: [],
          horizon: 1,
        }),
      /more than horizon 1/,
    );
  });
});

describe('tokenHorizon', () => {
  const protocol = {
    turnOrder: [0, 1, 2, 0, 1, 2],
    answerTurn: 5,
    permutePerEpisode: false,
    maxTurnTokens: 5,
  };
  const agent = (maxTurnTokens?: number) =>
    ({
      name: 'a',
      rolePrompt: '',
      speakerTag: 'A:',
      maxTurnTokens,
    }) as unknown as Team['agents'][number];
  const teamOf = (shape: typeof protocol, agents = [agent(), agent(), agent()]): Team => ({
    agents,
    protocol: shape,
  });

  test("an agent's turns times the longest turn, summed over a shared model's agents", () => {
    assert.equal(tokenHorizon(teamOf(protocol), [0]), 10);
    assert.equal(tokenHorizon(teamOf(protocol), [0, 1]), 20);
    assert.equal(tokenHorizon(teamOf(protocol), [3]), 0);
    // An agent's own maxTurnTokens replaces the protocol's.
    assert.equal(tokenHorizon(teamOf(protocol, [agent(), agent(7), agent()]), [0, 1]), 24);
  });

  test('with speakers permuted, every agent may take the busiest slots', () => {
    const permuted = { ...protocol, turnOrder: [0, 0, 1], permutePerEpisode: true };
    assert.equal(tokenHorizon(teamOf(permuted), [1]), 10);
    assert.equal(tokenHorizon(teamOf({ ...permuted, permutePerEpisode: false }), [1]), 5);
  });
});
