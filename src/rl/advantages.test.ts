import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ShapeError, TeamtrError } from '../util/errors.js';
import { agentWiseNormalize, dynamicSamplingFilter, grpoAdvantages } from './advantages.js';
import { assertAllClose, assertClose } from './test-support/batches.js';

// A batch of 7 trajectories in three prompt groups, interleaved on purpose:
//   group 7: rewards [1, 0, 0, 1]  mean 0.5, squared deviations 4 × 0.25 = 1,
//            sample variance 1/3, σ = 0.5773502691896258, (r − μ)/σ = ±0.8660254037844386
//   group 3: rewards [0.5, 0.5]    all equal → advantage 0
//   group 9: reward [2]            singleton → advantage 0
const rewards = [1, 0, 0, 1, 0.5, 0.5, 2];
const groupIds = [7, 7, 7, 7, 3, 3, 9];

describe('grpoAdvantages', () => {
  it('normalizes by the group mean and sample standard deviation', () => {
    const { advantages, metrics } = grpoAdvantages({ rewards, groupIds, epsilon: 0 });
    const a = 0.8660254037844386;
    assertAllClose(advantages, [a, -a, -a, a, 0, 0, 0], { relative: 1e-14 });
    assert.deepEqual(metrics, {
      groupCount: 3,
      singletonGroupCount: 1,
      uniformGroupCount: 1,
      rewardMean: 5 / 7,
      advantageAbsoluteMax: advantages[0],
    });
  });

  it('applies epsilon to the standard deviation', () => {
    // 0.5 / (0.5773502691896258 + 0.1) = 0.7378648...
    const { advantages } = grpoAdvantages({ rewards, groupIds, epsilon: 0.1 });
    assertClose(advantages[0], 0.5 / (Math.sqrt(1 / 3) + 0.1), { relative: 1e-14 });
  });

  it('without std normalization gives r − mean; leave-one-out gives r − mean of the others', () => {
    const centred = grpoAdvantages({ rewards, groupIds, normalizeStd: false }).advantages;
    assertAllClose(centred, [0.5, -0.5, -0.5, 0.5, 0, 0, 0]);
    // Leave-one-out in group 7: r = 1 → baseline (2 − 1)/3 = 1/3 → A = 2/3;
    //                           r = 0 → baseline 2/3 → A = −2/3 (= n/(n−1)·(r − μ) = 4/3 · ±0.5).
    const leaveOneOut = grpoAdvantages({
      rewards,
      groupIds,
      normalizeStd: false,
      leaveOneOut: true,
    }).advantages;
    assertAllClose(leaveOneOut, [2 / 3, -2 / 3, -2 / 3, 2 / 3, 0, 0, 0], { relative: 1e-14 });
  });

  it('treats a group of identical rewards as uniform even when its rounded mean is not', () => {
    // 0.1 × 3 / 3 = 0.10000000000000002 ≠ 0.1: the variance is a tiny non-zero; still uniform.
    const { advantages, metrics } = grpoAdvantages({
      rewards: [0.1, 0.1, 0.1],
      groupIds: [0, 0, 0],
    });
    assert.deepEqual([...advantages], [0, 0, 0]);
    assert.equal(metrics.uniformGroupCount, 1);
  });

  it('is invariant to a constant added to a group, and to scaling with normalizeStd', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 3 }), fc.double({ min: -5, max: 5, noNaN: true })),
          {
            minLength: 1,
            maxLength: 16,
          },
        ),
        fc.double({ min: -100, max: 100, noNaN: true }),
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.boolean(),
        (pairs, shift, scale, leaveOneOut) => {
          const groups = pairs.map(([group]) => group);
          const base = pairs.map(([, reward]) => Math.round(reward * 8) / 8); // allow exact ties
          const reference = grpoAdvantages({
            rewards: base,
            groupIds: groups,
            leaveOneOut,
            epsilon: 0,
          });
          const shifted = grpoAdvantages({
            rewards: base.map((reward, index) => reward + (groups[index] === 0 ? shift : 0)),
            groupIds: groups,
            leaveOneOut,
            epsilon: 0,
          });
          const scaled = grpoAdvantages({
            rewards: base.map((reward) => reward * scale),
            groupIds: groups,
            leaveOneOut,
            epsilon: 0,
          });
          assertAllClose(shifted.advantages, reference.advantages, {
            absolute: 1e-6,
            relative: 1e-6,
          });
          assertAllClose(scaled.advantages, reference.advantages, {
            absolute: 1e-9,
            relative: 1e-9,
          });
        },
      ),
    );
  });

  it('centres each group (advantages sum to 0 per group) and permutes with its input', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 12,
        }),
        (pairs) => {
          const groups = pairs.map(([group]) => group);
          const values = pairs.map(([, reward]) => reward);
          const { advantages } = grpoAdvantages({ rewards: values, groupIds: groups });
          for (const group of new Set(groups)) {
            const sum = advantages
              .filter((_, index) => groups[index] === group)
              .reduce((a, b) => a + b, 0);
            assertClose(sum, 0, { absolute: 1e-9 });
          }
          const reversed = grpoAdvantages({
            rewards: [...values].reverse(),
            groupIds: [...groups].reverse(),
          });
          assertAllClose([...reversed.advantages].reverse(), advantages, { absolute: 1e-12 });
        },
      ),
    );
  });

  it('rejects mismatched lengths and non-integer group ids', () => {
    assert.throws(() => grpoAdvantages({ rewards: [1, 2], groupIds: [0] }), ShapeError);
    assert.throws(() => grpoAdvantages({ rewards: [1], groupIds: [0.5] }), /integers/);
  });
});

describe('agentWiseNormalize', () => {
  it('normalizes each agent with its own mean and population standard deviation', () => {
    // Agent 0: [1, 0, 1] mean 2/3, population variance (1/9 + 4/9 + 1/9)/3 = 2/9, σ = √2/3;
    //   (1 − 2/3)/σ = 1/√2, (0 − 2/3)/σ = −√2.
    // Agent 1: [1, 0, 0] mean 1/3, σ = √2/3; (1 − 1/3)/σ = √2, (0 − 1/3)/σ = −1/√2.
    // (One global baseline would give mean 0.5, σ 0.5 and ±1 for everyone.)
    const { normalized, statistics } = agentWiseNormalize({
      values: [1, 0, 1, 1, 0, 0],
      agentIds: [0, 0, 0, 1, 1, 1],
      epsilon: 0,
    });
    const h = Math.SQRT1_2;
    assertAllClose(normalized, [h, -2 * h, h, 2 * h, -h, -h], { relative: 1e-14 });
    assert.equal(statistics.length, 2);
    assertClose(statistics[0].mean, 2 / 3);
    assertClose(statistics[0].standardDeviation, Math.SQRT2 / 3);
    assert.equal(statistics[1].groupId, null);
  });

  it('weights samples (token counts) and leaves weight-0 samples out of the statistics', () => {
    // values [1, 0] weights [3, 1]: mean 3/4, variance (3·1/16 + 9/16)/4 = 3/16, σ = √3/4;
    // (1 − 3/4)/σ = 1/√3, (0 − 3/4)/σ = −√3.
    const weighted = agentWiseNormalize({
      values: [1, 0],
      agentIds: [4, 4],
      weights: [3, 1],
      epsilon: 0,
    });
    assertAllClose(weighted.normalized, [1 / Math.sqrt(3), -Math.sqrt(3)], { relative: 1e-14 });
    // [1, 0 | 5 with weight 0]: mean 0.5, σ 0.5 → 1, −1, (5 − 0.5)/0.5 = 9.
    const excluded = agentWiseNormalize({
      values: [1, 0, 5],
      agentIds: [0, 0, 0],
      weights: [1, 1, 0],
      epsilon: 0,
    });
    assertAllClose(excluded.normalized, [1, -1, 9], { relative: 1e-14 });
  });

  it('with groups, computes one statistic per (agent, group) cell', () => {
    const { normalized, statistics } = agentWiseNormalize({
      values: [1, 0, 3, 3, 2, 4],
      agentIds: [0, 0, 0, 0, 1, 1],
      groupIds: [0, 0, 1, 1, 0, 0],
      normalizeStd: false,
    });
    // (agent 0, group 0): mean 0.5; (agent 0, group 1): uniform → 0; (agent 1, group 0): mean 3.
    assertAllClose(normalized, [0.5, -0.5, 0, 0, -1, 1]);
    assert.equal(statistics.length, 3);
  });

  it('for one agent with groups equals GRPO, up to the population/sample σ factor √(n/(n−1))', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 4 })), {
          minLength: 1,
          maxLength: 12,
        }),
        (pairs) => {
          const groups = pairs.map(([group]) => group);
          const values = pairs.map(([, reward]) => reward);
          const agentIds = values.map(() => 0);
          const centred = agentWiseNormalize({
            values,
            agentIds,
            groupIds: groups,
            normalizeStd: false,
          });
          const grpoCentred = grpoAdvantages({
            rewards: values,
            groupIds: groups,
            normalizeStd: false,
          });
          assertAllClose(centred.normalized, grpoCentred.advantages, { absolute: 1e-12 });
          const scaled = agentWiseNormalize({ values, agentIds, groupIds: groups, epsilon: 0 });
          const grpo = grpoAdvantages({ rewards: values, groupIds: groups, epsilon: 0 });
          groups.forEach((group, index) => {
            const size = groups.filter((other) => other === group).length;
            const factor = size > 1 ? Math.sqrt(size / (size - 1)) : 1;
            assertClose(scaled.normalized[index], grpo.advantages[index] * factor, {
              absolute: 1e-9,
            });
          });
        },
      ),
    );
  });

  it('rejects negative weights and mismatched lengths', () => {
    assert.throws(
      () => agentWiseNormalize({ values: [1, 2], agentIds: [0, 0], weights: [1, -1] }),
      TeamtrError,
    );
    assert.throws(() => agentWiseNormalize({ values: [1, 2], agentIds: [0] }), ShapeError);
  });
});

describe('dynamicSamplingFilter', () => {
  // group 0: [1, 0] varies → kept; group 1: [1, 1] equal → dropped; group 2: [0.3] singleton →
  // dropped; group 3: [2, 2, 2, 5] varies → kept.
  const batch = { rewards: [1, 0, 1, 1, 0.3, 2, 2, 2, 5], groupIds: [0, 0, 1, 1, 2, 3, 3, 3, 3] };

  it('keeps only groups whose rewards are not all equal', () => {
    const result = dynamicSamplingFilter(batch);
    assert.deepEqual([...result.keptIndices], [0, 1, 5, 6, 7, 8]);
    assert.deepEqual(result.keptGroupIds, [0, 3]);
    assert.equal(result.keptGroupCount, 2);
    assert.equal(result.droppedGroupCount, 2);
    assert.equal(result.keptTrajectoryCount, 6);
    assert.equal(result.droppedTrajectoryCount, 3);
  });

  it('applies the tolerance strictly and handles interleaved groups', () => {
    assert.deepEqual(dynamicSamplingFilter({ ...batch, tolerance: 1 }).keptGroupIds, [3]);
    const interleaved = dynamicSamplingFilter({ rewards: [1, 1, 0, 1], groupIds: [5, 6, 5, 6] });
    assert.deepEqual([...interleaved.keptIndices], [0, 2]);
  });

  it('drops exactly the trajectories whose GRPO advantage is identically 0 by construction', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 2 })), {
          minLength: 1,
          maxLength: 20,
        }),
        (pairs) => {
          const groups = pairs.map(([group]) => group);
          const values = pairs.map(([, reward]) => reward);
          const { keptIndices } = dynamicSamplingFilter({ rewards: values, groupIds: groups });
          const full = grpoAdvantages({ rewards: values, groupIds: groups }).advantages;
          const kept = new Set(keptIndices);
          full.forEach((advantage, index) => {
            if (!kept.has(index)) assert.equal(advantage, 0);
          });
          // Recomputing on the kept trajectories alone changes nothing for them.
          const sub = grpoAdvantages({
            rewards: [...keptIndices].map((index) => values[index]),
            groupIds: [...keptIndices].map((index) => groups[index]),
          }).advantages;
          assertAllClose(
            sub,
            [...keptIndices].map((index) => full[index]),
            { absolute: 0 },
          );
        },
      ),
    );
  });
});
