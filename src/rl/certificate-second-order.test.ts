import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  maxStatePenalty,
  surrogateGain,
  totalVariationPenalty,
  trustRegionPenalty,
  weightedTotalVariationPenalty,
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
import { tokenTotalVariation } from './total-variation.js';

// Row 0, mask [1, 0, 1, 1]: log ratios [ln 2, ·, ln ½, ·], TV [0.1, ·, 0.2, 0.3].
//   W before each token: 1, 2, 2·½ = 1 → Σ |W − 1|·TV = 0 + 1·0.2 + 0 = 0.2.
//   Pairs Σ_k Σ_{j<k} TV_j = 2·0.1 + 1·0.2 = 0.4.
// Row 1, mask [0, 1, 1, 0]: log ratios [·, ln 1.5, ·, ·], TV [·, 0.4, 0.5, ·].
//   W: 1, 1.5 → 0.5·0.5 = 0.25.  Pairs: 0.4.
const mask = [1, 0, 1, 1, 0, 1, 1, 0];
const logProbs = [Math.log(2), NaN, Math.log(0.5), 9, 3, Math.log(1.5), 0, -Infinity];
const oldLogProbs = [0, 5, 0, 0, NaN, 0, 0, 1];
const perTokenTotalVariation = [0.1, NaN, 0.2, 0.3, 7, 0.4, 0.5, -1];

describe('weightedTotalVariationPenalty', () => {
  it('matches the hand-computed Σ_k |W_k − 1|·TV_k', () => {
    const result = weightedTotalVariationPenalty({
      logProbs,
      oldLogProbs,
      perTokenTotalVariation,
      mask,
      rows: 2,
      epsilon: 2,
    });
    // [0.2, 0.25]: mean 0.225, s² = 2·0.025², SE = 0.025; penalty ε·mean = 0.45.
    assertAllClose(result.perTrajectory, [0.2, 0.25], { absolute: 1e-12 });
    assertClose(result.mean, 0.225, { absolute: 1e-12 });
    assertClose(result.standardError, 0.025, { absolute: 1e-12 });
    assertClose(result.penalty, 0.45, { absolute: 1e-12 });
    assertClose(result.penaltyStandardError, 0.05, { absolute: 1e-12 });
  });

  const batches = maskedBatch({ maxRows: 5, maxLength: 9 }).chain((batch) =>
    fc.record({
      batch: fc.constant(batch),
      logRatios: floats(batch.rows * batch.length, -1, 1),
      totalVariation: floats(batch.rows * batch.length, 0, 1),
      epsilon: fc.double({ min: 0, max: 2, noNaN: true }),
      junk: fc.array(garbage, { minLength: 1, maxLength: 4 }),
    }),
  );

  it('equals the direct Σ_k |Π_{j<k} ρ_j − 1|·TV_k and ignores masked-out values', () => {
    fc.assert(
      fc.property(batches, ({ batch, logRatios, totalVariation, epsilon, junk }) => {
        const zeros = new Float64Array(logRatios.length);
        const input = { mask: batch.mask, rows: batch.rows, epsilon };
        const result = weightedTotalVariationPenalty({
          ...input,
          logProbs: logRatios,
          oldLogProbs: zeros,
          perTokenTotalVariation: totalVariation,
        });
        for (let row = 0; row < batch.rows; row++) {
          let weight = 1;
          let expected = 0;
          for (let t = 0; t < batch.length; t++) {
            const index = row * batch.length + t;
            if (batch.mask[index] !== 1) continue;
            expected += Math.abs(weight - 1) * totalVariation[index];
            weight *= Math.exp(logRatios[index]);
          }
          assertClose(result.perTrajectory[row], expected, { absolute: 1e-12, relative: 1e-9 });
        }
        const scrambled = weightedTotalVariationPenalty({
          ...input,
          logProbs: scrambleMasked(logRatios, batch.mask, junk),
          oldLogProbs: scrambleMasked(zeros, batch.mask, junk),
          perTokenTotalVariation: scrambleMasked(totalVariation, batch.mask, junk),
        });
        assert.deepEqual(scrambled, result);
      }),
    );
  });

  it('is 0 with no step and does not decrease when any token’s TV grows', () => {
    fc.assert(
      fc.property(
        batches,
        fc.nat(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        ({ batch, logRatios, totalVariation, junk }, pick, grown) => {
          const base = { mask: batch.mask, rows: batch.rows, epsilon: 1 };
          const zeros = new Float64Array(logRatios.length);
          const still = weightedTotalVariationPenalty({
            ...base,
            logProbs: scrambleMasked(zeros, batch.mask, junk),
            oldLogProbs: zeros,
            perTokenTotalVariation: totalVariation,
          });
          assert.equal(still.penalty, 0);
          const before = weightedTotalVariationPenalty({
            ...base,
            logProbs: logRatios,
            oldLogProbs: zeros,
            perTokenTotalVariation: totalVariation,
          });
          const larger = Float64Array.from(totalVariation);
          const index = pick % larger.length;
          larger[index] = Math.max(larger[index]!, grown);
          const after = weightedTotalVariationPenalty({
            ...base,
            logProbs: logRatios,
            oldLogProbs: zeros,
            perTokenTotalVariation: larger,
          });
          assert.ok(after.penalty >= before.penalty);
        },
      ),
    );
  });

  interface StepSetup {
    rows: number;
    tokens: number;
    vocab: number;
    logits: Float64Array;
    direction: Float64Array;
    sampled: number[];
  }

  /**
   * A consistent small step: each token has an old distribution p (softmax of logits), a
   * direction g and a sampled token; the new distribution is softmax(log p + t·g). KL, TV and the
   * sampled ratio all come from the same pair, as a trainer's would.
   */
  const steps = fc
    .record({ rows: fc.integer({ min: 1, max: 4 }), tokens: fc.integer({ min: 1, max: 8 }) })
    .chain(({ rows, tokens }) =>
      fc.record({
        rows: fc.constant(rows),
        tokens: fc.constant(tokens),
        vocab: fc.integer({ min: 2, max: 6 }),
        logits: floats(rows * tokens * 6, -2, 2),
        direction: floats(rows * tokens * 6, -1, 1),
        sampled: fc.array(fc.nat(), { minLength: rows * tokens, maxLength: rows * tokens }),
      }),
    );

  function consistentStep(
    { rows, tokens, vocab, logits, direction, sampled }: StepSetup,
    size: number,
  ) {
    const positions = rows * tokens;
    const oldFull = new Float64Array(positions * vocab);
    const newFull = new Float64Array(positions * vocab);
    for (let position = 0; position < positions; position++) {
      let oldNormalizer = 0;
      let newNormalizer = 0;
      for (let token = 0; token < vocab; token++) {
        const logit = logits[position * 6 + token]!;
        oldNormalizer += Math.exp(logit);
        newNormalizer += Math.exp(logit + size * direction[position * 6 + token]!);
      }
      for (let token = 0; token < vocab; token++) {
        const logit = logits[position * 6 + token]!;
        oldFull[position * vocab + token] = logit - Math.log(oldNormalizer);
        newFull[position * vocab + token] =
          logit + size * direction[position * 6 + token]! - Math.log(newNormalizer);
      }
    }
    const table = { oldLogProbsFull: oldFull, newLogProbsFull: newFull, positions, vocab };
    const oldLogProbs = new Float64Array(positions);
    const newLogProbs = new Float64Array(positions);
    for (let position = 0; position < positions; position++) {
      const token = sampled[position]! % vocab;
      oldLogProbs[position] = oldFull[position * vocab + token]!;
      newLogProbs[position] = newFull[position * vocab + token]!;
    }
    return {
      rows,
      mask: new Float64Array(positions).fill(1),
      logProbs: newLogProbs,
      oldLogProbs,
      perTokenKl: tokenKl(table),
      perTokenTotalVariation: tokenTotalVariation(table),
    };
  }

  it('is below the first-order penalties once the step is small, on every trajectory', () => {
    fc.assert(
      fc.property(steps, (setup) => {
        const step = consistentStep(setup, 1e-3);
        const weighted = weightedTotalVariationPenalty({ ...step, epsilon: 1 });
        const firstOrder = totalVariationPenalty({ ...step, epsilon: 1 });
        const pinsker = trustRegionPenalty({ ...step, epsilon: 1 });
        for (let row = 0; row < setup.rows; row++) {
          // Twice the double sum: the first-order penalties carry 2ε, the weighted one ε.
          const bound = 2 * firstOrder.perTrajectory[row]!;
          assert.ok(weighted.perTrajectory[row]! <= bound + 1e-12, `row ${row}`);
          assert.ok(firstOrder.perTrajectory[row]! <= pinsker.perTrajectory[row]! + 1e-9);
        }
      }),
    );
  });

  it('shrinks like the square of the step, the first-order penalty like the step', () => {
    fc.assert(
      fc.property(steps, (setup) => {
        fc.pre(setup.tokens >= 2);
        const at = (size: number) => {
          const step = consistentStep(setup, size);
          return {
            weighted: weightedTotalVariationPenalty({ ...step, epsilon: 1 }).penalty,
            firstOrder: totalVariationPenalty({ ...step, epsilon: 1 }).penalty,
          };
        };
        const large = at(1e-2);
        const small = at(1e-3);
        fc.pre(large.weighted > 1e-12);
        const weightedShrink = large.weighted / small.weighted;
        const firstOrderShrink = large.firstOrder / small.firstOrder;
        // At least second order (third when a sampled token's ratio moves only at second order).
        assert.ok(weightedShrink > 70, `weighted ${weightedShrink}`);
        assert.ok(firstOrderShrink > 7 && firstOrderShrink < 13, `first ${firstOrderShrink}`);
      }),
    );
  });
});

describe('totalVariationPenalty and maxStatePenalty', () => {
  it('match hand computations', () => {
    const input = { perTokenTotalVariation, mask, rows: 2, epsilon: 0.5 };
    // Pairs [0.4, 0.4] → mean 0.4, SE 0; penalty 2·0.5·0.4 = 0.4.
    const firstOrder = totalVariationPenalty(input);
    assertAllClose(firstOrder.perTrajectory, [0.4, 0.4], { absolute: 1e-12 });
    assertClose(firstOrder.penalty, 0.4, { absolute: 1e-12 });
    // M by token index: max(0.1, 0.4) = 0.4, max(0.2, 0.5) = 0.5, 0.3.
    // Σ_{k>j} M_k: j = 0 → 0.8, j = 1 → 0.3, j = 2 → 0.
    // Row 0: 0.1·0.8 + 0.2·0.3 = 0.14.  Row 1: 0.4·0.8 + 0.5·0.3 = 0.47.
    const maxState = maxStatePenalty(input);
    assertAllClose(maxState.maxTotalVariation, [0.4, 0.5, 0.3], { absolute: 1e-12 });
    assertAllClose(maxState.perTrajectory, [0.14, 0.47], { absolute: 1e-12 });
    assertClose(maxState.penalty, 2 * 0.5 * 0.305, { absolute: 1e-12 });
  });

  it('max-state is never above the first-order penalty to the longest row; both 0 without a step', () => {
    fc.assert(
      fc.property(
        maskedBatch({ maxRows: 5, maxLength: 9 }).chain((batch) =>
          fc.record({
            batch: fc.constant(batch),
            totalVariation: floats(batch.rows * batch.length, 0, 1),
          }),
        ),
        ({ batch, totalVariation }) => {
          const input = { mask: batch.mask, rows: batch.rows, epsilon: 1 };
          let longest = 0;
          for (let row = 0; row < batch.rows; row++) {
            let tokens = 0;
            for (let t = 0; t < batch.length; t++) tokens += batch.mask[row * batch.length + t]!;
            longest = Math.max(longest, tokens);
          }
          const firstOrder = totalVariationPenalty({
            ...input,
            perTokenTotalVariation: totalVariation,
            horizon: longest,
          });
          const maxState = maxStatePenalty({ ...input, perTokenTotalVariation: totalVariation });
          assert.ok(maxState.penalty <= firstOrder.penalty + 1e-12);
          const zeros = new Float64Array(totalVariation.length);
          assert.equal(
            totalVariationPenalty({ ...input, perTokenTotalVariation: zeros }).penalty,
            0,
          );
          assert.equal(maxStatePenalty({ ...input, perTokenTotalVariation: zeros }).penalty, 0);
        },
      ),
    );
  });

  it('refuse a total variation outside [0, 1] at an agent token', () => {
    for (const call of [totalVariationPenalty, maxStatePenalty]) {
      assert.throws(
        () => call({ perTokenTotalVariation: [1.5], mask: [1], rows: 1, epsilon: 1 }),
        /lies in \[0, 1\]/,
      );
    }
    assert.throws(
      () =>
        weightedTotalVariationPenalty({
          logProbs: [0],
          oldLogProbs: [0],
          perTokenTotalVariation: [0.1],
          mask: [1],
          rows: 1,
          epsilon: Infinity,
        }),
      /reward range/,
    );
  });
});

/**
 * The exactly enumerable game of certificate.test.ts: agent A speaks, agent B (fixed, uniform)
 * answers, agent A speaks again; binary tokens, reward R(a₁, b, a₂) ∈ [0, 1], A's old policy
 * uniform, so the batch of all 8 transcripts makes every batch mean an exact expectation and the
 * penalties exact bounds with ε = 1 ≥ the reward range.
 */
describe('second-order certificates on an exactly enumerable game', () => {
  const transcripts = [0, 1, 2, 3, 4, 5, 6, 7].map((code) => ({
    a1: code >> 2,
    b: (code >> 1) & 1,
    a2: code & 1,
  }));
  const gameMask = Float32Array.from(transcripts.flatMap(() => [1, 0, 1]));

  it('never exceed the true improvement, and each is at least as tight as the last', () => {
    const game = fc.record({
      reward: floats(8, 0, 1),
      firstProbability: fc.double({ min: 0.02, max: 0.98, noNaN: true }),
      secondProbabilities: floats(4, 0.02, 0.98), // π′(a₂ = 1 | a₁, b), indexed 2·a₁ + b
    });
    fc.assert(
      fc.property(game, ({ reward, firstProbability, secondProbabilities }) => {
        const rewardOf = (a1: number, b: number, a2: number) => reward[4 * a1 + 2 * b + a2]!;
        const newFirst = (a1: number) => (a1 === 1 ? firstProbability : 1 - firstProbability);
        const secondOne = (a1: number, b: number) => secondProbabilities[2 * a1 + b]!;
        const newSecond = (a1: number, b: number, a2: number) =>
          a2 === 1 ? secondOne(a1, b) : 1 - secondOne(a1, b);
        const secondValue = (a1: number, b: number) =>
          (rewardOf(a1, b, 0) + rewardOf(a1, b, 1)) / 2;
        const firstQ = (a1: number) => (secondValue(a1, 0) + secondValue(a1, 1)) / 2;
        const firstValue = (firstQ(0) + firstQ(1)) / 2;
        const logProbs: number[] = [];
        const advantages: number[] = [];
        const perTokenKl: number[] = [];
        const perTokenTotalVariation: number[] = [];
        const bernoulli = (probabilityOne: number) => ({
          oldLogProbsFull: [Math.log(0.5), Math.log(0.5)],
          newLogProbsFull: [Math.log(1 - probabilityOne), Math.log(probabilityOne)],
          positions: 1,
          vocab: 2,
        });
        for (const { a1, b, a2 } of transcripts) {
          logProbs.push(Math.log(newFirst(a1)), 0, Math.log(newSecond(a1, b, a2)));
          advantages.push(firstQ(a1) - firstValue, 0, rewardOf(a1, b, a2) - secondValue(a1, b));
          // B's token in the middle is not A's: 0 there (masked out anyway).
          for (const probability of [firstProbability, NaN, secondOne(a1, b)]) {
            const rows = Number.isNaN(probability) ? null : bernoulli(probability);
            perTokenKl.push(rows ? tokenKl(rows)[0]! : 0);
            perTokenTotalVariation.push(rows ? tokenTotalVariation(rows)[0]! : 0);
          }
        }
        const oldLogProbs = logProbs.map((_, index) => (index % 3 === 1 ? 0 : Math.log(0.5)));
        const grid = { mask: gameMask, rows: 8, epsilon: 1 };
        const surrogate = surrogateGain({ logProbs, oldLogProbs, advantages, ...grid }).mean;
        let trueImprovement = 0;
        for (const { a1, b, a2 } of transcripts) {
          const newProbability = newFirst(a1) * 0.5 * newSecond(a1, b, a2);
          trueImprovement += (newProbability - 1 / 8) * rewardOf(a1, b, a2);
        }
        const penalties = [
          weightedTotalVariationPenalty({ logProbs, oldLogProbs, perTokenTotalVariation, ...grid }),
          totalVariationPenalty({ perTokenTotalVariation, ...grid }),
          trustRegionPenalty({ perTokenKl, ...grid }),
        ].map((result) => result.penalty);
        // Each bounds |J′ − J − L| (float32 TV and KL: a 1e-6 allowance).
        for (const penalty of penalties) {
          assert.ok(
            Math.abs(trueImprovement - surrogate) <= penalty + 1e-6,
            `|true − L| = ${Math.abs(trueImprovement - surrogate)} > penalty ${penalty}`,
          );
        }
        assert.ok(penalties[0]! <= penalties[1]! + 1e-6);
        assert.ok(penalties[1]! <= penalties[2]! + 1e-6);
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * Outputs of varying length. Agent A first says stop (s) or go (g); after g it emits a second
 * token a₂. Old: π(g) = 1/8, π(a₂) uniform; new: π′(g) = 0.9, π′(a₂ = 1) = 0.02. Rewards: R(s) = 0,
 * R(g, 0) = 0, R(g, 1) = 1. The batch of 16 rows (14 stops, one (g, 0), one (g, 1)) has the old
 * team's exact frequencies, so batch means are exact expectations. The update moves mass onto the
 * two-token outputs, where its second token hurts: true − L = (0.9 − 1/8)·(−0.48) = −0.372.
 */
describe('a game whose outputs have different lengths', () => {
  const rows = 16;
  const mask = Float64Array.from({ length: 2 * rows }, (_, index) =>
    index % 2 === 0 || index >= 2 * 14 ? 1 : 0,
  );
  const logProbs = new Float64Array(2 * rows);
  const oldLogProbs = new Float64Array(2 * rows);
  const advantages = new Float64Array(2 * rows);
  const perTokenKl = new Float64Array(2 * rows);
  const perTokenTotalVariation = new Float64Array(2 * rows);
  const firstRows = {
    oldLogProbsFull: [Math.log(7 / 8), Math.log(1 / 8)],
    newLogProbsFull: [Math.log(0.1), Math.log(0.9)],
    positions: 1,
    vocab: 2,
  };
  const secondRows = {
    oldLogProbsFull: [Math.log(0.5), Math.log(0.5)],
    newLogProbsFull: [Math.log(0.98), Math.log(0.02)],
    positions: 1,
    vocab: 2,
  };
  // Old values: V(g) = 1/2, V = 1/16; A₁(s) = −1/16, A₁(g) = 7/16, A₂(g, a₂) = ±1/2.
  for (let row = 0; row < rows; row++) {
    const go = row >= 14;
    const first = 2 * row;
    oldLogProbs[first] = Math.log(go ? 1 / 8 : 7 / 8);
    logProbs[first] = Math.log(go ? 0.9 : 0.1);
    advantages[first] = go ? 7 / 16 : -1 / 16;
    perTokenKl[first] = tokenKl(firstRows)[0]!;
    perTokenTotalVariation[first] = tokenTotalVariation(firstRows)[0]!;
    if (!go) continue;
    const secondToken = row - 14;
    oldLogProbs[first + 1] = Math.log(0.5);
    logProbs[first + 1] = Math.log(secondToken === 1 ? 0.02 : 0.98);
    advantages[first + 1] = secondToken === 1 ? 0.5 : -0.5;
    perTokenKl[first + 1] = tokenKl(secondRows)[0]!;
    perTokenTotalVariation[first + 1] = tokenTotalVariation(secondRows)[0]!;
  }
  const trueImprovement = 0.9 * 0.02 - (1 / 8) * 0.5;
  const grid = { mask, rows, epsilon: 1 };
  const surrogate = surrogateGain({ logProbs, oldLogProbs, advantages, ...grid }).mean;

  it('has the surrogate and true improvement computed by hand', () => {
    // L = Σ(π′ − π)·A₁ + P(g)·Σ(π′ − π)·A₂ = 0.3875 + (1/8)·(−0.48) = 0.3275.
    assertClose(surrogate, 0.3275, { absolute: 1e-12 });
    assertClose(trueImprovement - surrogate, -0.372, { absolute: 1e-12 });
  });

  it('needs the horizon: counting only each row’s own later tokens falls below the error', () => {
    const rowCount = trustRegionPenalty({ perTokenKl, ...grid }).penalty;
    assert.ok(Math.abs(trueImprovement - surrogate) > rowCount, `${rowCount}`);
    for (const penalty of [
      trustRegionPenalty({ perTokenKl, ...grid, horizon: 2 }).penalty,
      totalVariationPenalty({ perTokenTotalVariation, ...grid, horizon: 2 }).penalty,
    ]) {
      assert.ok(Math.abs(trueImprovement - surrogate) <= penalty, `${penalty}`);
    }
    assert.throws(
      () => trustRegionPenalty({ perTokenKl, ...grid, horizon: 1 }),
      /row 14 has 2 agent tokens, more than horizon 1/,
    );
  });

  it('the weighted penalty needs none, and here it is exact', () => {
    // Σ_k |W_k − 1|·TV_k: only the go rows' second token, |0.9/(1/8) − 1|·0.48 = 2.976, in 2 of 16.
    const weighted = weightedTotalVariationPenalty({
      logProbs,
      oldLogProbs,
      perTokenTotalVariation,
      ...grid,
    }).penalty;
    assertClose(weighted, 0.372, { absolute: 1e-6 });
    assert.ok(Math.abs(trueImprovement - surrogate) <= weighted + 1e-6);
  });
});
