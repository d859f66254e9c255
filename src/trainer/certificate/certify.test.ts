import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import type { CertificateEvidence } from '../update/engine.js';
import { certificateLowerBound } from '../../rl/index.js';
import { RandomGenerator } from '../../util/random.js';
import { certificateBounds, heldOutBounds, tokenHorizon } from './certify.js';
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

describe('heldOutBounds', () => {
  // Two prompts × two trajectories, one agent token each, sampled at probability ½.
  const batch = {
    trajectories: [1, 0, 1, 0].map((reward, index) => ({ reward, problemIndex: index >> 1 })),
  } as unknown as TeamBatch;
  const totalVariation = [0.05, 0.1, 0.1, 0.02];
  const evidence: CertificateEvidence = {
    tokens: {
      rows: 4,
      length: 1,
      rowTrajectories: [0, 1, 2, 3],
      mask: new Float32Array(4).fill(1),
      oldLogProbs: new Float32Array(4).fill(Math.log(0.5)),
      items: [],
      gridIndex: Int32Array.from([0, 1, 2, 3]),
      totalTokens: 4,
      sampledHidden: [],
    },
    newLogProbs: Float32Array.from([0.6, 0.4, 0.7, 0.5].map(Math.log)),
    perTokenKl: Float32Array.from(totalVariation.map((value) => 2 * value * value)),
    perTokenTotalVariation: Float32Array.from(totalVariation),
  };

  test('each held-out bound is the clustered lower bound of its per-trajectory terms', () => {
    // Advantages +1, −1 per prompt: gains (ρ − 1)·A = 0.2, 0.2, 0.4, 0. Horizon 2 charges the
    // one token once: first-order terms g − 2·TV; second order pays nothing for a first token.
    const settings = { epsilon: 1, earlierShifts: [0.3], horizon: 2 };
    const bounds = heldOutBounds({ batch, evidence }, settings, { confidence: 0.9, seed: 's' });
    const expected = (terms: number[], name: string) =>
      certificateLowerBound({
        perTrajectory: terms,
        clusterIds: [0, 0, 1, 1],
        alpha: 0.1,
        random: new RandomGenerator(`s/${name}`),
      }).lowerBound;
    const firstOrder = expected([0.1, 0, 0.2, -0.04], 'first-order');
    const secondOrder = expected([0.2, 0.2, 0.4, 0], 'second-order');
    close(bounds.heldOutCertificateLowerBound!, firstOrder);
    close(bounds.heldOutSecondOrderCertificateLowerBound!, secondOrder);
    assert.ok(firstOrder < bounds.heldOutCertificate!, 'below the estimate');
    close(bounds.heldOutCertificate!, 0.065);
    assert.equal(bounds.heldOutBoundConfidence, 0.9);
    // No earlier update is stale on a batch sampled by the team as it is now.
    close(bounds.heldOutSecondOrderCertificate!, 0.2);
  });

  test('no held-out batch, no bounds', () => {
    const bounds = heldOutBounds(
      null,
      { epsilon: 1, earlierShifts: [], horizon: 2 },
      {
        confidence: 0.95,
        seed: 's',
      },
    );
    assert.equal(bounds.heldOutCertificateLowerBound, null);
    assert.equal(bounds.heldOutBoundConfidence, null);
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
