import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { measuredImprovement, occupancyGap, offPolicyImprovementEstimate } from './improvement.js';
import {
  assertClose,
  floats,
  garbage,
  maskedBatch,
  scrambleMasked,
} from './test-support/batches.js';

describe('offPolicyImprovementEstimate', () => {
  // Three rows of length 2, baseline 0.5:
  //   row 0 (mask 1 1): log W = 0.1 + 0.2 = 0.3, W − 1 = 0.3498588075760032, R − b = 0.5
  //                     → 0.17492940378800160
  //   row 1 (mask 1 0): log W = −0.5, W − 1 = −0.3934693402873666, R − b = −0.5 → 0.1967346701436833
  //   row 2 (mask 0 0): W = 1 → 0
  // mean 0.3716640739316849/3 = 0.12388802464389494; sample sd / √3 = 0.062263015768687;
  // 95% one-sided bound: mean − 1.6448536269514722·SE = 0.021474477331833414.
  // ESS = (e^0.3 + e^−0.5 + 1)² / (e^0.6 + e^−1 + 1) = 2.7398882445827364.
  const hand = {
    logProbs: [0.1, 0.2, -0.5, NaN, 4, -Infinity],
    oldLogProbs: [0, 0, 0, 1, NaN, 3],
    mask: [1, 1, 1, 0, 0, 0],
    rows: 3,
    rewards: [1, 0, 0.25],
    baseline: 0.5,
  };

  it('matches a hand computation', () => {
    const result = offPolicyImprovementEstimate(hand);
    assertClose(result.estimate, 0.12388802464389494, { absolute: 1e-14 });
    assertClose(result.standardError, 0.062263015768687, { absolute: 1e-14 });
    assertClose(result.lowerBound, 0.021474477331833414, { absolute: 1e-12 });
    assert.equal(result.confidence, 0.95);
    assert.equal(result.metrics.cappedCount, 0);
    assertClose(result.metrics.logWeightMax, 0.3, { absolute: 1e-15 });
    assertClose(result.metrics.effectiveSampleSize, 2.7398882445827364, { absolute: 1e-12 });
  });

  it('accepts a per-trajectory baseline and caps exploding weights', () => {
    // Per-row baselines [1, 0, 0.25] make every R − b = 0.
    assert.equal(offPolicyImprovementEstimate({ ...hand, baseline: [1, 0, 0.25] }).estimate, 0);
    // log W = 30 > cap 20: W − 1 = e²⁰ − 1 = 485165194.4097903, R − b = 1.
    const capped = offPolicyImprovementEstimate({
      logProbs: [30],
      oldLogProbs: [0],
      mask: [1],
      rows: 1,
      rewards: [1],
      baseline: 0,
    });
    assertClose(capped.estimate, Math.expm1(20), { relative: 1e-15 });
    assert.equal(capped.metrics.cappedCount, 1);
    assert.equal(capped.metrics.logWeightMax, 30);
    assert.ok(Number.isNaN(capped.standardError));
  });

  it('is exactly J(π′) − J(π) on a batch that enumerates the old team’s transcripts', () => {
    // Agent tokens a₁, a₂ around a fixed other-agent token b, all binary; the old agent is uniform,
    // so the 8 transcripts are equally likely and the batch mean is the exact expectation.
    const game = fc.record({
      reward: floats(8, 0, 1),
      newProbabilities: floats(5, 0.01, 0.99), // π′(a₁ = 1), then π′(a₂ = 1 | a₁, b) at 1 + 2a₁ + b
      baseline: fc.double({ min: -1, max: 1, noNaN: true }),
    });
    fc.assert(
      fc.property(game, ({ reward, newProbabilities, baseline }) => {
        const logProbs: number[] = [];
        const rewards: number[] = [];
        let trueImprovement = 0;
        for (let code = 0; code < 8; code++) {
          const [a1, b, a2] = [code >> 2, (code >> 1) & 1, code & 1];
          const first = a1 === 1 ? newProbabilities[0] : 1 - newProbabilities[0];
          const second =
            a2 === 1 ? newProbabilities[1 + 2 * a1 + b] : 1 - newProbabilities[1 + 2 * a1 + b];
          logProbs.push(Math.log(first), 0, Math.log(second));
          rewards.push(reward[code]);
          trueImprovement += (first * 0.5 * second - 1 / 8) * reward[code];
        }
        const result = offPolicyImprovementEstimate({
          logProbs,
          oldLogProbs: logProbs.map((_, index) => (index % 3 === 1 ? 0 : Math.log(0.5))),
          mask: logProbs.map((_, index) => (index % 3 === 1 ? 0 : 1)),
          rows: 8,
          rewards,
          baseline,
        });
        assertClose(result.estimate, trueImprovement, { absolute: 1e-12 });
      }),
    );
  });

  it('ignores values at mask-0 positions; a higher confidence gives a lower bound', () => {
    fc.assert(
      fc.property(
        maskedBatch({ minRows: 2 }).chain((batch) =>
          fc.record({
            batch: fc.constant(batch),
            logProbs: floats(batch.rows * batch.length, -2, 0),
            oldLogProbs: floats(batch.rows * batch.length, -2, 0),
            rewards: floats(batch.rows, 0, 1),
            junk: fc.array(garbage, { minLength: 1, maxLength: 3 }),
          }),
        ),
        ({ batch, logProbs, oldLogProbs, rewards, junk }) => {
          const base = { mask: batch.mask, rows: batch.rows, rewards, baseline: 0.5 };
          const reference = offPolicyImprovementEstimate({ ...base, logProbs, oldLogProbs });
          const scrambled = offPolicyImprovementEstimate({
            ...base,
            logProbs: scrambleMasked(logProbs, batch.mask, junk),
            oldLogProbs: scrambleMasked(oldLogProbs, batch.mask, junk),
          });
          assert.deepEqual(scrambled, reference);
          const stricter = offPolicyImprovementEstimate({
            ...base,
            logProbs,
            oldLogProbs,
            confidence: 0.99,
          });
          // A standard error below the estimate's rounding (two nearly equal trajectories) moves
          // nothing in float64: only a resolvable one must lower the bound.
          if (reference.standardError > 1e-12 * Math.max(1, Math.abs(reference.estimate)))
            assert.ok(stricter.lowerBound < reference.lowerBound);
        },
      ),
    );
  });
});

describe('measuredImprovement', () => {
  it('paired: per-prompt differences of group means', () => {
    // Group means before: g0 0.5, g1 0, g2 1; after: g0 1, g1 0.5, g2 0.5 (g9 exists only after).
    // Differences 0.5, 0.5, −0.5: mean 1/6, s² = (2·(1/3)² + (2/3)²)/2 = 1/3, SE = √(1/9) = 1/3.
    const result = measuredImprovement({
      rewardsBefore: [1, 0, 0, 0, 1, 1],
      groupIdsBefore: [0, 0, 1, 1, 2, 2],
      rewardsAfter: [1, 1, 0, 1, 1, 0, 1],
      groupIdsAfter: [0, 0, 1, 1, 2, 2, 9],
      paired: true,
    });
    assertClose(result.improvement, 1 / 6, { absolute: 1e-15 });
    assertClose(result.standardError, 1 / 3, { absolute: 1e-15 });
    assertClose(result.meanBefore, 0.5, { absolute: 1e-15 });
    assertClose(result.meanAfter, 2 / 3, { absolute: 1e-15 });
    assert.equal(result.count, 3);
    assert.equal(result.degreesOfFreedom, 2);
    assert.equal(result.method, 'paired');
  });

  it('unpaired: Welch standard error and degrees of freedom', () => {
    // before [1, 0, 0, 0]: mean 1/4, s² = 1/4 → s²/n = 1/16; after [1, 1, 0]: mean 2/3, s² = 1/3 →
    // s²/n = 1/9. improvement 5/12; SE = √(1/16 + 1/9) = 5/12;
    // df = (25/144)² / ((1/16)²/3 + (1/9)²/2) = 3750/930 = 4.032258064516129.
    const result = measuredImprovement({
      rewardsBefore: [1, 0, 0, 0],
      rewardsAfter: [1, 1, 0],
      paired: false,
    });
    assertClose(result.improvement, 5 / 12, { absolute: 1e-15 });
    assertClose(result.standardError, 5 / 12, { absolute: 1e-15 });
    assertClose(result.degreesOfFreedom, 3750 / 930, { absolute: 1e-12 });
    assert.equal(result.method, 'welch');
  });

  it('pairing removes the prompt-to-prompt variance that Welch keeps', () => {
    // Prompts of very different difficulty, each improved by exactly 0.1: paired SE 0, Welch SE > 0.
    const before = [0.1, 0.1, 0.5, 0.5, 0.8, 0.8];
    const after = before.map((reward) => reward + 0.1);
    const groupIds = [0, 0, 1, 1, 2, 2];
    const paired = measuredImprovement({
      rewardsBefore: before,
      rewardsAfter: after,
      groupIdsBefore: groupIds,
      groupIdsAfter: groupIds,
      paired: true,
    });
    assertClose(paired.improvement, 0.1, { absolute: 1e-12 });
    assertClose(paired.standardError, 0, { absolute: 1e-12 });
    assert.ok(
      measuredImprovement({ rewardsBefore: before, rewardsAfter: after, paired: false })
        .standardError > 0.1,
    );
  });

  it('asks for group ids when paired', () => {
    assert.throws(
      () => measuredImprovement({ rewardsBefore: [1], rewardsAfter: [1], paired: true }),
      /paired needs groupIdsBefore/,
    );
  });
});

describe('occupancyGap', () => {
  it('matches a hand computation', () => {
    // W = 1, 2, 0.5, 1.5 → ½|W − 1| = 0, 0.5, 0.25, 0.25: mean 0.25;
    // s² = (0.0625 + 0.0625)/3 = 1/24, SE = √(1/96) = 0.10206207261596575.
    const result = occupancyGap({
      logRatioEarlierAgents: [0, Math.log(2), Math.log(0.5), Math.log(1.5)],
    });
    assertClose(result.gap, 0.25, { absolute: 1e-15 });
    assertClose(result.standardError, 0.10206207261596575, { absolute: 1e-15 });
    assert.equal(result.count, 4);
  });

  it('is exactly the total variation when the batch enumerates a uniform stale distribution', () => {
    fc.assert(
      fc.property(floats(4, 0.01, 1), (weights) => {
        const total = weights.reduce((a, b) => a + b, 0);
        const current = weights.map((weight) => weight / total);
        const stale = 0.25;
        const totalVariation =
          0.5 * current.reduce((sum, probability) => sum + Math.abs(probability - stale), 0);
        const { gap } = occupancyGap({
          logRatioEarlierAgents: current.map((p) => Math.log(p / stale)),
        });
        assertClose(gap, totalVariation, { absolute: 1e-12 });
      }),
    );
  });
});
