import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TeamtrError } from '../util/errors.js';
import {
  certificate,
  staleShiftPenalty,
  surrogateGain,
  trajectoryShift,
  trustRegionPenalty,
} from './certificate.js';
import { tokenKl } from './kl.js';
import {
  assertAllClose,
  assertClose,
  floats,
  garbage,
  maskedBatch,
  scrambleMasked,
} from './test-support/batches.js';

describe('surrogateGain', () => {
  it('sums (ρ − 1)·A over each row’s agent tokens and averages over rows', () => {
    // Row 0 (mask 1 1 0): ρ = 1.2, A = 1 → 0.2;  ρ = 0.9, A = −1 → 0.1;  sum 0.3
    // Row 1 (mask 0 1 1): ρ = 1.5, A = 0.5 → 0.25; ρ = 0.5, A = 2 → −1;   sum −0.75
    // mean −0.225; deviations ±0.525, s² = 0.55125, SE = √(0.55125/2) = 0.525
    const result = surrogateGain({
      logProbs: Float64Array.from([
        Math.log(1.2),
        Math.log(0.9),
        NaN,
        7,
        Math.log(1.5),
        Math.log(0.5),
      ]),
      oldLogProbs: [0, 0, 0, NaN, 0, 0],
      advantages: [1, -1, Infinity, 3, 0.5, 2],
      mask: [1, 1, 0, 0, 1, 1],
      rows: 2,
    });
    assertAllClose(result.perTrajectory, [0.3, -0.75], { absolute: 1e-12 });
    assertClose(result.mean, -0.225, { absolute: 1e-12 });
    assertClose(result.standardError, 0.525, { absolute: 1e-12 });
  });

  it('counts a row without agent tokens as 0 (the mean is over all trajectories)', () => {
    const result = surrogateGain({
      logProbs: [Math.log(2), 0],
      oldLogProbs: [0, 0],
      advantages: [1, 1],
      mask: [1, 0],
      rows: 2,
    });
    // Rows: (2 − 1)·1 = 1 and 0 → mean 0.5
    assertClose(result.mean, 0.5, { absolute: 1e-12 });
  });
});

// Row 0, mask [1, 0, 1, 1], KL [0.02, ·, 0.08, 0.18] → √(KL/2) = 0.1, 0.2, 0.3.
//   Σ_k Σ_{j<k}: k = 2 → 0.1; k = 3 → 0.1 + 0.2; total 0.4 (= 2·0.1 + 1·0.2 + 0·0.3).
//   Trajectory shift: 0.1 + 0.2 + 0.3 = 0.6.
// Row 1, mask [0, 1, 1, 0], KL [·, 0.5, 2, ·] → 0.5, 1.
//   Double sum 1·0.5 = 0.5; shift 1.5.
const klMask = [1, 0, 1, 1, 0, 1, 1, 0];
const perTokenKl = [0.02, NaN, 0.08, 0.18, -4, 0.5, 2, Infinity];

describe('trustRegionPenalty', () => {
  it('matches the hand-computed double sum', () => {
    // Double sums [0.4, 0.5]: mean 0.45, s² = 0.005, SE = 0.05. ε = 1 → penalty 2·0.45 = 0.9.
    const result = trustRegionPenalty({ perTokenKl, mask: klMask, rows: 2, epsilon: 1 });
    assertAllClose(result.perTrajectory, [0.4, 0.5], { absolute: 1e-12 });
    assertClose(result.mean, 0.45, { absolute: 1e-12 });
    assertClose(result.standardError, 0.05, { absolute: 1e-12 });
    assertClose(result.penalty, 0.9, { absolute: 1e-12 });
    assertClose(result.penaltyStandardError, 0.1, { absolute: 1e-12 });
  });

  const klBatch = maskedBatch({ maxRows: 5, maxLength: 10 }).chain((batch) =>
    fc.record({
      batch: fc.constant(batch),
      kl: floats(batch.rows * batch.length, 0, 0.5),
      epsilon: fc.double({ min: 0, max: 2, noNaN: true }),
      junk: fc.array(garbage, { minLength: 1, maxLength: 4 }),
    }),
  );

  it('equals the O(n²) double loop Σ_k Σ_{j<k} √(KL_j/2) and ignores masked-out values', () => {
    fc.assert(
      fc.property(klBatch, ({ batch, kl, epsilon, junk }) => {
        const result = trustRegionPenalty({
          perTokenKl: kl,
          mask: batch.mask,
          rows: batch.rows,
          epsilon,
        });
        for (let row = 0; row < batch.rows; row++) {
          const own: number[] = [];
          for (let t = 0; t < batch.length; t++) {
            if (batch.mask[row * batch.length + t] === 1) own.push(kl[row * batch.length + t]);
          }
          let expected = 0;
          for (let k = 0; k < own.length; k++) {
            for (let j = 0; j < k; j++) expected += Math.sqrt(own[j] / 2);
          }
          assertClose(result.perTrajectory[row], expected, { absolute: 1e-12, relative: 1e-12 });
        }
        const scrambled = trustRegionPenalty({
          perTokenKl: scrambleMasked(kl, batch.mask, junk),
          mask: batch.mask,
          rows: batch.rows,
          epsilon,
        });
        assert.deepEqual(scrambled, result);
      }),
    );
  });

  it('rejects negative KL at agent tokens and a bad epsilon', () => {
    assert.throws(
      () => trustRegionPenalty({ perTokenKl: [-1e-9], mask: [1], rows: 1, epsilon: 1 }),
      /never negative/,
    );
    assert.throws(
      () => trustRegionPenalty({ perTokenKl: [0], mask: [1], rows: 1, epsilon: -1 }),
      /reward range/,
    );
  });
});

describe('trajectoryShift and staleShiftPenalty', () => {
  it('match hand computations', () => {
    // Shifts [0.6, 1.5]: mean 1.05, s² = 2·0.45²/1 = 0.405, SE = √(0.405/2) = 0.45.
    const shift = trajectoryShift({ perTokenKl, mask: klMask, rows: 2 });
    assertAllClose(shift.perTrajectory, [0.6, 1.5], { absolute: 1e-12 });
    assertClose(shift.mean, 1.05, { absolute: 1e-12 });
    assertClose(shift.standardError, 0.45, { absolute: 1e-12 });
    // 2·ε·Σ shifts = 2·0.5·(0.6 + 1.05) = 1.65
    assertClose(
      staleShiftPenalty({ earlierAgentsTrajectoryShift: [0.6, 1.05], epsilon: 0.5 }),
      1.65,
      {
        absolute: 1e-12,
      },
    );
    assert.equal(staleShiftPenalty({ earlierAgentsTrajectoryShift: [], epsilon: 1 }), 0);
    assert.throws(
      () => staleShiftPenalty({ earlierAgentsTrajectoryShift: [-0.1], epsilon: 1 }),
      TeamtrError,
    );
  });
});

describe('certificate', () => {
  it('subtracts both penalties and refuses negative ones', () => {
    // 0.3 − 0.1 − 0.05 = 0.15
    assertClose(
      certificate({ surrogate: 0.3, penalty: 0.1, stalePenalty: 0.05 }).lowerBound,
      0.15,
      {
        absolute: 1e-15,
      },
    );
    assert.equal(certificate({ surrogate: 0.3, penalty: 0 }).stalePenalty, 0);
    assert.throws(() => certificate({ surrogate: 0, penalty: -1 }), /penalties must be ≥ 0/);
  });

  it('never exceeds the surrogate on random batches', () => {
    fc.assert(
      fc.property(
        maskedBatch().chain((batch) =>
          fc.record({
            batch: fc.constant(batch),
            logRatios: floats(batch.rows * batch.length, -1, 1),
            advantages: floats(batch.rows * batch.length, -2, 2),
            kl: floats(batch.rows * batch.length, 0, 1),
            shifts: fc.array(fc.double({ min: 0, max: 3, noNaN: true }), { maxLength: 4 }),
          }),
        ),
        ({ batch, logRatios, advantages, kl, shifts }) => {
          const base = { mask: batch.mask, rows: batch.rows };
          const surrogate = surrogateGain({
            ...base,
            logProbs: logRatios,
            oldLogProbs: new Float64Array(logRatios.length),
            advantages,
          }).mean;
          const { penalty } = trustRegionPenalty({ ...base, perTokenKl: kl, epsilon: 1 });
          const stalePenalty = staleShiftPenalty({
            earlierAgentsTrajectoryShift: shifts,
            epsilon: 1,
          });
          assert.ok(certificate({ surrogate, penalty, stalePenalty }).lowerBound <= surrogate);
        },
      ),
    );
  });
});

/**
 * An exactly enumerable two-agent game: agent A speaks, agent B (fixed, uniform) answers, agent A
 * speaks again; every token is binary and the reward R(a₁, b, a₂) ∈ [0, 1] is an arbitrary table.
 * Agent A's old policy is uniform, so the 8 transcripts are equally likely and a batch of exactly
 * those 8 rows makes every batch mean an exact expectation under the old team.
 */
describe('certificate on an exactly enumerable game', () => {
  const transcripts = [0, 1, 2, 3, 4, 5, 6, 7].map((code) => ({
    a1: code >> 2,
    b: (code >> 1) & 1,
    a2: code & 1,
  }));
  const mask = Float32Array.from(transcripts.flatMap(() => [1, 0, 1]));

  it('the certificate never exceeds the true improvement J(π′) − J(π)', () => {
    const game = fc.record({
      reward: floats(8, 0, 1),
      firstProbability: fc.double({ min: 0.02, max: 0.98, noNaN: true }),
      secondProbabilities: floats(4, 0.02, 0.98), // π′(a₂ = 1 | a₁, b), indexed 2·a₁ + b
    });
    fc.assert(
      fc.property(game, ({ reward, firstProbability, secondProbabilities }) => {
        const rewardOf = (a1: number, b: number, a2: number) => reward[4 * a1 + 2 * b + a2];
        const newFirst = (a1: number) => (a1 === 1 ? firstProbability : 1 - firstProbability);
        const newSecond = (a1: number, b: number, a2: number) =>
          a2 === 1 ? secondProbabilities[2 * a1 + b] : 1 - secondProbabilities[2 * a1 + b];
        // Old advantages (uniform π): A₂ = R − mean_{a₂} R; Q₁(a₁) = mean_{b, a₂} R; A₁ = Q₁ − mean Q₁.
        const secondValue = (a1: number, b: number) =>
          (rewardOf(a1, b, 0) + rewardOf(a1, b, 1)) / 2;
        const firstQ = (a1: number) => (secondValue(a1, 0) + secondValue(a1, 1)) / 2;
        const firstValue = (firstQ(0) + firstQ(1)) / 2;
        const logProbs: number[] = [];
        const advantages: number[] = [];
        for (const { a1, b, a2 } of transcripts) {
          logProbs.push(Math.log(newFirst(a1)), 0, Math.log(newSecond(a1, b, a2)));
          advantages.push(firstQ(a1) - firstValue, 0, rewardOf(a1, b, a2) - secondValue(a1, b));
        }
        const oldLogProbs = Float64Array.from(logProbs, (_, index) =>
          index % 3 === 1 ? 0 : Math.log(0.5),
        );
        const perTokenKl = new Float64Array(24);
        transcripts.forEach(({ a1, b }, row) => {
          const bernoulliKl = (probabilityOne: number) =>
            tokenKl({
              oldLogProbsFull: [Math.log(0.5), Math.log(0.5)],
              newLogProbsFull: [Math.log(1 - probabilityOne), Math.log(probabilityOne)],
              positions: 1,
              vocab: 2,
            })[0];
          perTokenKl[3 * row] = bernoulliKl(firstProbability);
          perTokenKl[3 * row + 2] = bernoulliKl(secondProbabilities[2 * a1 + b]);
        });
        // ε = max over states of |E_{a∼π′} A(s, a)|.
        let epsilon = Math.abs(
          newFirst(0) * (firstQ(0) - firstValue) + newFirst(1) * (firstQ(1) - firstValue),
        );
        for (const a1 of [0, 1]) {
          for (const b of [0, 1]) {
            const expected = [0, 1].reduce(
              (sum, a2) => sum + newSecond(a1, b, a2) * (rewardOf(a1, b, a2) - secondValue(a1, b)),
              0,
            );
            epsilon = Math.max(epsilon, Math.abs(expected));
          }
        }
        const surrogate = surrogateGain({ logProbs, oldLogProbs, advantages, mask, rows: 8 }).mean;
        const { penalty } = trustRegionPenalty({ perTokenKl, mask, rows: 8, epsilon });
        const rangePenalty = trustRegionPenalty({ perTokenKl, mask, rows: 8, epsilon: 1 }).penalty;
        let trueImprovement = 0;
        for (const { a1, b, a2 } of transcripts) {
          const newProbability = newFirst(a1) * 0.5 * newSecond(a1, b, a2);
          trueImprovement += (newProbability - 1 / 8) * rewardOf(a1, b, a2);
        }
        const bound = certificate({ surrogate, penalty }).lowerBound;
        assert.ok(
          bound <= trueImprovement + 1e-12,
          `certificate ${bound} > true improvement ${trueImprovement}`,
        );
        assert.ok(certificate({ surrogate, penalty: rangePenalty }).lowerBound <= bound + 1e-12);
        // And the surrogate is first-order exact: without the penalty it can overshoot, but the
        // gap |J′ − J − L| is itself within the penalty.
        assert.ok(Math.abs(trueImprovement - surrogate) <= penalty + 1e-12);
      }),
      { numRuns: 300 },
    );
  });
});
