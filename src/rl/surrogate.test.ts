import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TeamtrError } from '../util/errors.js';
import { aggregationWeights, lossAggregations, type LossAggregation } from './aggregation.js';
import { clippedSurrogate } from './surrogate.js';
import {
  assertAllClose,
  assertClose,
  floats,
  garbage,
  maskedBatch,
  scrambleMasked,
} from './test-support/batches.js';

// Two rows of length 3; row 0 has 2 agent tokens, row 1 has 1 (M = 3 tokens, S = 2 sequences).
// clipLow 0.2, clipHigh 0.28 (DAPO), ratios ρ = exp(logProb − oldLogProb):
//   a (row 0, t 0): ρ = 1.5, A = +1: unclipped 1.5, clipped 1.28·1 = 1.28 smaller → objective 1.28,
//                   gradient 0 (clip-high)
//   b (row 0, t 1): ρ = 0.5, A = −2: unclipped −1, clipped 0.8·(−2) = −1.6 smaller → −1.6, grad 0
//                   (clip-low)
//   c (row 1, t 0): ρ = 1.1, A = +2: inside the band, objective 2.2, dObjective/dlogProb = ρA = 2.2
const handMask = Float32Array.from([1, 1, 0, 1, 0, 0]);
const handOld = Float64Array.from([-1, -2, NaN, -0.5, NaN, 3]);
const handNew = Float64Array.from([
  -1 + Math.log(1.5),
  -2 + Math.log(0.5),
  NaN,
  -0.5 + Math.log(1.1),
  9,
  NaN,
]);
const handAdvantages = Float64Array.from([1, -2, NaN, 2, Infinity, 4]);

function handCase(aggregation: LossAggregation) {
  return clippedSurrogate({
    logProbs: handNew,
    oldLogProbs: handOld,
    advantages: handAdvantages,
    mask: handMask,
    rows: 2,
    clipLow: 0.2,
    clipHigh: 0.28,
    aggregation,
  });
}

describe('clippedSurrogate: hand-computed batch', () => {
  it('token-mean: every token weighs 1/M = 1/3', () => {
    // loss = −(1.28 − 1.6 + 2.2)/3 = −1.88/3; dLoss/dlogProb(c) = −2.2/3
    const result = handCase('token-mean');
    assertClose(result.loss, -1.88 / 3, { absolute: 1e-12 });
    assertAllClose(result.gradLogProbs, [0, 0, 0, -2.2 / 3, 0, 0], {
      absolute: 1e-7,
      relative: 1e-6,
    });
  });

  it('sequence-mean: 1/(S·n_r) = 1/4 on row 0 and 1/2 on row 1', () => {
    // loss = −[(1.28 − 1.6)/4 + 2.2/2] = −(−0.08 + 1.1) = −1.02; grad(c) = −2.2/2 = −1.1
    const result = handCase('sequence-mean');
    assertClose(result.loss, -1.02, { absolute: 1e-12 });
    assertAllClose(result.gradLogProbs, [0, 0, 0, -1.1, 0, 0], { absolute: 1e-7, relative: 1e-6 });
  });

  it('sequence-sum-normalized: 1/(S·C) with C = length = 3', () => {
    // loss = −1.88/6; grad(c) = −2.2/6
    const result = handCase('sequence-sum-normalized');
    assertClose(result.loss, -1.88 / 6, { absolute: 1e-12 });
    assertAllClose(result.gradLogProbs, [0, 0, 0, -2.2 / 6, 0, 0], {
      absolute: 1e-7,
      relative: 1e-6,
    });
  });

  it('reports clip fractions, ratio statistics and the k3 KL estimate', () => {
    const { metrics } = handCase('token-mean');
    assertClose(metrics.clipFraction, 2 / 3);
    assertClose(metrics.clipLowFraction, 1 / 3);
    assertClose(metrics.clipHighFraction, 1 / 3);
    assertClose(metrics.ratioMean, 3.1 / 3, { absolute: 1e-12 });
    assertClose(metrics.ratioMin, 0.5, { absolute: 1e-12 });
    assertClose(metrics.ratioMax, 1.5, { absolute: 1e-12 });
    // k3 = (ρ − 1) − ln ρ: 0.5 − ln 1.5 = 0.0945348918918356, −0.5 + ln 2 = 0.1931471805599453,
    //                      0.1 − ln 1.1 = 0.0046898201956751; mean 0.29237189260745597 / 3
    assertClose(metrics.approxKl, 0.29237189260745597 / 3, { absolute: 1e-12 });
    // (1.5·1 + 0.5·(−2) + 1.1·2)/3 = 2.7/3
    assertClose(metrics.unclippedObjectiveMean, 0.9, { absolute: 1e-12 });
    assert.equal(metrics.tokenCount, 3);
    assert.equal(metrics.sequenceCount, 2);
  });

  it('does not clip a positive advantage whose ratio fell (the unclipped term is the minimum)', () => {
    // ρ = 0.5, A = 1: min(0.5, 0.8) = 0.5, gradient −ρA/M = −0.5
    const result = clippedSurrogate({
      logProbs: [Math.log(0.5)],
      oldLogProbs: [0],
      advantages: [1],
      mask: [1],
      rows: 1,
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'token-mean',
    });
    assertClose(result.loss, -0.5, { absolute: 1e-12 });
    assertClose(result.gradLogProbs[0], -0.5, { absolute: 1e-7 });
    assert.equal(result.metrics.clipFraction, 0);
  });

  it('gives loss 0, zero gradient and NaN token statistics for an empty mask', () => {
    const result = clippedSurrogate({
      logProbs: [1, 2],
      oldLogProbs: [1, 2],
      advantages: [1, 1],
      mask: [0, 0],
      rows: 1,
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'sequence-mean',
    });
    assert.equal(result.loss, 0);
    assert.deepEqual([...result.gradLogProbs], [0, 0]);
    assert.ok(Number.isNaN(result.metrics.ratioMean));
  });

  it('rejects bad clip ranges, unknown aggregations and mismatched shapes', () => {
    const base = {
      logProbs: [0],
      oldLogProbs: [0],
      advantages: [1],
      mask: [1],
      rows: 1,
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'token-mean' as LossAggregation,
    };
    assert.throws(() => clippedSurrogate({ ...base, clipLow: 1 }), TeamtrError);
    assert.throws(() => clippedSurrogate({ ...base, clipHigh: -0.1 }), TeamtrError);
    assert.throws(
      () => clippedSurrogate({ ...base, aggregation: 'mean' as LossAggregation }),
      /valid: token-mean, sequence-mean, sequence-sum-normalized/,
    );
    assert.throws(
      () => clippedSurrogate({ ...base, advantages: [1, 2] }),
      /advantages has 2 entries/,
    );
  });
});

/** A random batch of float64 per-token values for the surrogate. */
const surrogateBatch = maskedBatch().chain((batch) => {
  const size = batch.rows * batch.length;
  return fc.record({
    batch: fc.constant(batch),
    oldLogProbs: floats(size, -6, -0.01),
    logRatios: floats(size, -0.6, 0.6),
    advantages: floats(size, -3, 3),
    aggregation: fc.constantFrom(...lossAggregations),
    clipLow: fc.double({ min: 0.05, max: 0.3, noNaN: true }),
    clipHigh: fc.double({ min: 0.05, max: 0.4, noNaN: true }),
  });
});

type SurrogateCase = typeof surrogateBatch extends fc.Arbitrary<infer T> ? T : never;

function run(sample: SurrogateCase, logProbs?: Float64Array) {
  const { batch, oldLogProbs, logRatios } = sample;
  return clippedSurrogate({
    logProbs: logProbs ?? oldLogProbs.map((old, index) => old + logRatios[index]),
    oldLogProbs,
    advantages: sample.advantages,
    mask: batch.mask,
    rows: batch.rows,
    clipLow: sample.clipLow,
    clipHigh: sample.clipHigh,
    aggregation: sample.aggregation,
  });
}

describe('clippedSurrogate: properties', () => {
  it('matches central finite differences in float64 (away from the clip kinks)', () => {
    fc.assert(
      fc.property(surrogateBatch, (sample) => {
        const logProbs = sample.oldLogProbs.map((old, index) => old + sample.logRatios[index]);
        const { gradLogProbs } = run(sample, logProbs);
        const step = 1e-6;
        for (let index = 0; index < logProbs.length; index++) {
          const ratio = Math.exp(sample.logRatios[index]);
          const nearKink =
            Math.abs(ratio - (1 - sample.clipLow)) < 1e-4 ||
            Math.abs(ratio - (1 + sample.clipHigh)) < 1e-4;
          if (nearKink) continue;
          const plus = Float64Array.from(logProbs);
          const minus = Float64Array.from(logProbs);
          plus[index] += step;
          minus[index] -= step;
          const numeric = (run(sample, plus).loss - run(sample, minus).loss) / (2 * step);
          assertClose(
            gradLogProbs[index],
            numeric,
            { absolute: 1e-7, relative: 1e-5 },
            `token ${index}`,
          );
        }
      }),
      { numRuns: 60 },
    );
  });

  it('at ratio 1 everywhere is the plain policy gradient: dLoss/dlogProb = −A/normalizer', () => {
    fc.assert(
      fc.property(surrogateBatch, (sample) => {
        const { batch, oldLogProbs, advantages, aggregation } = sample;
        const result = run(sample, oldLogProbs);
        const { weights } = aggregationWeights({ mask: batch.mask, rows: batch.rows, aggregation });
        let expectedLoss = 0;
        for (let index = 0; index < advantages.length; index++) {
          const expected = batch.mask[index] === 1 ? -weights[index] * advantages[index] : 0;
          expectedLoss += expected;
          assertClose(result.gradLogProbs[index], expected, { absolute: 1e-7, relative: 1e-6 });
        }
        assertClose(result.loss, expectedLoss, { absolute: 1e-12, relative: 1e-12 });
        assert.equal(result.metrics.clipFraction, result.metrics.tokenCount > 0 ? 0 : NaN);
        if (aggregation === 'token-mean') {
          const tokenCount = batch.mask.reduce((a, b) => a + b, 0);
          batch.mask.forEach((bit, index) => {
            if (bit === 1) {
              assertClose(result.gradLogProbs[index], -advantages[index] / tokenCount, {
                absolute: 1e-7,
                relative: 1e-6,
              });
            }
          });
        }
      }),
    );
  });

  it('ignores every value at mask-0 positions (NaN, ±∞ included)', () => {
    fc.assert(
      fc.property(
        surrogateBatch,
        fc.array(garbage, { minLength: 1, maxLength: 5 }),
        (sample, junk) => {
          const logProbs = sample.oldLogProbs.map((old, index) => old + sample.logRatios[index]);
          const reference = run(sample, logProbs);
          const { mask } = sample.batch;
          const scrambled = run(
            {
              ...sample,
              oldLogProbs: scrambleMasked(sample.oldLogProbs, mask, junk),
              advantages: scrambleMasked(sample.advantages, mask, [...junk].reverse()),
            },
            scrambleMasked(logProbs, mask, junk),
          );
          assert.deepEqual(scrambled, reference);
        },
      ),
    );
  });

  it('equals a row-by-row reference loop (means of means written out directly)', () => {
    fc.assert(
      fc.property(surrogateBatch, (sample) => {
        const { batch, oldLogProbs, logRatios, advantages, clipLow, clipHigh, aggregation } =
          sample;
        const rowObjectives: number[][] = [];
        for (let row = 0; row < batch.rows; row++) {
          const objectives: number[] = [];
          for (let t = 0; t < batch.length; t++) {
            const index = row * batch.length + t;
            if (batch.mask[index] === 0) continue;
            const ratio = Math.exp(oldLogProbs[index] + logRatios[index] - oldLogProbs[index]);
            const clippedRatio = Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh);
            objectives.push(Math.min(ratio * advantages[index], clippedRatio * advantages[index]));
          }
          if (objectives.length > 0) rowObjectives.push(objectives);
        }
        const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
        let expected = 0;
        if (rowObjectives.length > 0) {
          if (aggregation === 'token-mean')
            expected = -sum(rowObjectives.flat()) / rowObjectives.flat().length;
          else if (aggregation === 'sequence-mean') {
            expected =
              -sum(rowObjectives.map((values) => sum(values) / values.length)) /
              rowObjectives.length;
          } else {
            expected =
              -sum(rowObjectives.map((values) => sum(values) / batch.length)) /
              rowObjectives.length;
          }
        }
        assertClose(run(sample).loss, expected, { absolute: 1e-12, relative: 1e-12 });
      }),
    );
  });

  it('the three aggregations coincide when every sequence has the same number of tokens', () => {
    const equalLengthBatch = fc
      .record({
        rows: fc.integer({ min: 1, max: 5 }),
        length: fc.integer({ min: 1, max: 6 }),
        seed: fc.integer(),
      })
      .chain(({ rows, length }) =>
        fc.record({
          rows: fc.constant(rows),
          length: fc.constant(length),
          tokensPerRow: fc.integer({ min: 1, max: length }),
          order: fc.array(fc.array(fc.nat(), { minLength: length, maxLength: length }), {
            minLength: rows,
            maxLength: rows,
          }),
          values: floats(rows * length, -2, 2),
          advantages: floats(rows * length, -2, 2),
        }),
      );
    fc.assert(
      fc.property(equalLengthBatch, ({ rows, length, tokensPerRow, order, values, advantages }) => {
        // Each row marks tokensPerRow positions, chosen by sorting random keys.
        const mask = new Float32Array(rows * length);
        order.forEach((keys, row) => {
          const positions = keys
            .map((key, t) => ({ key, t }))
            .sort((a, b) => a.key - b.key || a.t - b.t);
          for (let k = 0; k < tokensPerRow; k++) mask[row * length + positions[k].t] = 1;
        });
        const losses = lossAggregations.map((aggregation) =>
          clippedSurrogate({
            logProbs: values,
            oldLogProbs: values.map((value) => value - 0.1),
            advantages,
            mask,
            rows,
            clipLow: 0.2,
            clipHigh: 0.28,
            aggregation,
            normalizer: tokensPerRow,
          }),
        );
        for (const other of losses.slice(1)) {
          assertClose(other.loss, losses[0].loss, { absolute: 1e-12, relative: 1e-12 });
          assertAllClose(other.gradLogProbs, losses[0].gradLogProbs, {
            absolute: 1e-7,
            relative: 1e-6,
          });
        }
      }),
    );
  });
});

describe('aggregationWeights', () => {
  it('token-mean and sequence-mean weights sum to 1; rows without tokens get none', () => {
    fc.assert(
      fc.property(
        maskedBatch(),
        fc.constantFrom(...lossAggregations),
        ({ rows, mask }, aggregation) => {
          const { weights, tokenCount, sequenceCount } = aggregationWeights({
            mask,
            rows,
            aggregation,
          });
          const total = weights.reduce((a, b) => a + b, 0);
          const length = mask.length / rows;
          if (tokenCount === 0) assert.equal(total, 0);
          else if (aggregation === 'sequence-sum-normalized') {
            assertClose(total, tokenCount / (sequenceCount * length), { absolute: 1e-12 });
          } else assertClose(total, 1, { absolute: 1e-12 });
          mask.forEach((bit, index) => {
            if (bit === 0) assert.equal(weights[index], 0);
          });
        },
      ),
    );
  });

  it('rejects a non-positive normalizer', () => {
    assert.throws(
      () =>
        aggregationWeights({
          mask: [1],
          rows: 1,
          aggregation: 'sequence-sum-normalized',
          normalizer: 0,
        }),
      /positive normalizer/,
    );
  });
});
