import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TeamtrError } from '../util/errors.js';
import { lossAggregations } from './aggregation.js';
import { placeTerminalReward } from './layout.js';
import {
  assertAllClose,
  assertClose,
  floats,
  garbage,
  maskedBatch,
  scrambleMasked,
} from './test-support/batches.js';
import { generalizedAdvantageEstimation, valueLoss } from './value.js';

describe('generalizedAdvantageEstimation', () => {
  it('matches a hand computation that skips other agents’ tokens', () => {
    // One row, mask [1, 0, 1, 1, 0]: the agent's steps are t0, t2, t3 (t1 is another agent's token,
    // its reward 5 is ignored). γ = 0.9, λ = 0.8, γλ = 0.72.
    //   t3: δ = 1 − 0.6 = 0.4;                 Â = 0.4;                    return 1.0
    //   t2: δ = 0 + 0.9·0.6 − 0.2 = 0.34;      Â = 0.34 + 0.72·0.4 = 0.628; return 0.828
    //   t0: δ = 0.1 + 0.9·0.2 − 0.5 = −0.22;   Â = −0.22 + 0.72·0.628 = 0.23216; return 0.73216
    const result = generalizedAdvantageEstimation({
      rewards: [0.1, 5, 0, 1, 0],
      values: [0.5, 9, 0.2, 0.6, 9],
      mask: [1, 0, 1, 1, 0],
      rows: 1,
      gamma: 0.9,
      lambda: 0.8,
    });
    assertAllClose(result.advantages, [0.23216, 0, 0.628, 0.4, 0], { absolute: 1e-7 });
    assertAllClose(result.returns, [0.73216, 0, 0.828, 1.0, 0], { absolute: 1e-7 });
  });

  const gaeBatch = maskedBatch({ maxRows: 4, maxLength: 8 }).chain((batch) =>
    fc.record({
      batch: fc.constant(batch),
      rewards: floats(batch.rows * batch.length, -1, 1),
      values: floats(batch.rows * batch.length, -1, 1),
      gamma: fc.double({ min: 0, max: 1, noNaN: true }),
      lambda: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  );

  it('equals the closed form Â_k = Σ_{m≥k} (γλ)^(m−k)·δ_m (recursive vs direct sum)', () => {
    fc.assert(
      fc.property(gaeBatch, ({ batch, rewards, values, gamma, lambda }) => {
        const { advantages } = generalizedAdvantageEstimation({
          rewards,
          values,
          mask: batch.mask,
          rows: batch.rows,
          gamma,
          lambda,
        });
        for (let row = 0; row < batch.rows; row++) {
          const steps: number[] = [];
          for (let t = 0; t < batch.length; t++) {
            if (batch.mask[row * batch.length + t] === 1) steps.push(row * batch.length + t);
          }
          const deltas = steps.map(
            (step, k) =>
              rewards[step] +
              gamma * (k + 1 < steps.length ? values[steps[k + 1]] : 0) -
              values[step],
          );
          steps.forEach((step, k) => {
            let expected = 0;
            for (let m = k; m < steps.length; m++)
              expected += (gamma * lambda) ** (m - k) * deltas[m];
            assertClose(advantages[step], expected, { absolute: 1e-6, relative: 1e-6 });
          });
        }
      }),
    );
  });

  it('with λ = 1 gives the discounted return minus the value; ignores mask-0 values', () => {
    fc.assert(
      fc.property(gaeBatch, fc.array(garbage, { minLength: 1, maxLength: 4 }), (sample, junk) => {
        const { batch, rewards, values, gamma } = sample;
        const arguments_ = { mask: batch.mask, rows: batch.rows, gamma, lambda: 1 };
        const reference = generalizedAdvantageEstimation({ ...arguments_, rewards, values });
        const scrambled = generalizedAdvantageEstimation({
          ...arguments_,
          rewards: scrambleMasked(rewards, batch.mask, junk),
          values: scrambleMasked(values, batch.mask, junk),
        });
        assert.deepEqual(scrambled, reference);
        for (let row = 0; row < batch.rows; row++) {
          let discounted = 0;
          for (let t = batch.length - 1; t >= 0; t--) {
            const index = row * batch.length + t;
            if (batch.mask[index] === 0) continue;
            discounted = rewards[index] + gamma * discounted;
            assertClose(reference.returns[index], discounted, { absolute: 1e-6, relative: 1e-6 });
          }
        }
      }),
    );
  });

  it('with a terminal team reward, γ = λ = 1 and V = 0, every agent token gets the reward', () => {
    const mask = Float32Array.from([0, 1, 1, 0, 1, 0, 1, 1]);
    const rewards = placeTerminalReward({ rewards: [0.75, -1], mask, rows: 2 });
    const { advantages } = generalizedAdvantageEstimation({
      rewards,
      values: new Float32Array(8),
      mask,
      rows: 2,
      gamma: 1,
      lambda: 1,
    });
    assert.deepEqual([...advantages], [0, 0.75, 0.75, 0, -1, 0, -1, -1]);
  });

  it('rejects gamma or lambda outside [0, 1]', () => {
    assert.throws(
      () =>
        generalizedAdvantageEstimation({
          rewards: [0],
          values: [0],
          mask: [1],
          rows: 1,
          gamma: 1.1,
          lambda: 1,
        }),
      TeamtrError,
    );
  });
});

describe('valueLoss', () => {
  // Token-mean over 3 tokens (w = 1/3), clipRange 0.2:
  //   t0: V 1.0, V_old 0.5, R 2: V_clip 0.7; (1 − 2)² = 1 < (0.7 − 2)² = 1.69 → clipped, grad 0
  //   t1: V 0.6, V_old 0.5, R 0: inside the band; error 0.36, grad 0.6/3 = 0.2
  //   t2: V 0.0, V_old 0.5, R 1: V_clip 0.3; (0 − 1)² = 1 > (0.3 − 1)² = 0.49 → unclipped, grad −1/3
  //   loss = ½·(1.69 + 0.36 + 1)/3 = 3.05/6
  const hand = {
    values: [1.0, 0.6, 0.0],
    oldValues: [0.5, 0.5, 0.5],
    returns: [2, 0, 1],
    mask: [1, 1, 1],
    rows: 1,
    aggregation: 'token-mean' as const,
  };

  it('matches a hand computation with clipping', () => {
    const result = valueLoss({ ...hand, clipRange: 0.2 });
    assertClose(result.loss, 3.05 / 6, { absolute: 1e-12 });
    assertAllClose(result.gradValues, [0, 0.2, -1 / 3], { absolute: 1e-7 });
    assertClose(result.metrics.clipFraction, 1 / 3);
    // returns [2, 0, 1]: Σ(R − 1)² = 2. Residuals R − V = [1, −0.6, 1], mean 7/15,
    // Σ(dev)² = (64 + 256 + 64)/225 = 384/225. EV = 1 − (384/225)/2 = 11/75.
    assertClose(result.metrics.explainedVariance, 11 / 75, { absolute: 1e-12 });
    assertClose(result.metrics.valueMean, 1.6 / 3, { absolute: 1e-12 });
    assertClose(result.metrics.returnMean, 1, { absolute: 1e-12 });
  });

  it('without clipRange is ½·(V − R)² aggregated', () => {
    // ½·(1 + 0.36 + 1)/3 = 2.36/6
    const result = valueLoss(hand);
    assertClose(result.loss, 2.36 / 6, { absolute: 1e-12 });
    assertAllClose(result.gradValues, [-1 / 3, 0.2, -1 / 3], { absolute: 1e-7 });
  });

  it('matches central finite differences and ignores mask-0 values', () => {
    const valueBatch = maskedBatch().chain((batch) =>
      fc.record({
        batch: fc.constant(batch),
        values: floats(batch.rows * batch.length, -2, 2),
        oldValues: floats(batch.rows * batch.length, -2, 2),
        returns: floats(batch.rows * batch.length, -2, 2),
        aggregation: fc.constantFrom(...lossAggregations),
        junk: fc.array(garbage, { minLength: 1, maxLength: 4 }),
      }),
    );
    fc.assert(
      fc.property(valueBatch, ({ batch, values, oldValues, returns, aggregation, junk }) => {
        const clipRange = 0.3;
        const lossAt = (candidate: Float64Array) =>
          valueLoss({
            values: candidate,
            oldValues,
            returns,
            mask: batch.mask,
            rows: batch.rows,
            clipRange,
            aggregation,
          });
        const result = lossAt(values);
        const step = 1e-6;
        for (let index = 0; index < values.length; index++) {
          const change = values[index] - oldValues[index];
          const clippedValue = oldValues[index] + Math.max(-clipRange, Math.min(clipRange, change));
          const nearKink =
            Math.abs(Math.abs(change) - clipRange) < 1e-4 ||
            Math.abs(
              Math.abs(clippedValue - returns[index]) - Math.abs(values[index] - returns[index]),
            ) < 1e-4;
          if (nearKink) continue;
          const plus = Float64Array.from(values);
          const minus = Float64Array.from(values);
          plus[index] += step;
          minus[index] -= step;
          const numeric = (lossAt(plus).loss - lossAt(minus).loss) / (2 * step);
          assertClose(result.gradValues[index], numeric, { absolute: 1e-7, relative: 1e-5 });
        }
        const scrambled = valueLoss({
          values: scrambleMasked(values, batch.mask, junk),
          oldValues: scrambleMasked(oldValues, batch.mask, junk),
          returns: scrambleMasked(returns, batch.mask, junk),
          mask: batch.mask,
          rows: batch.rows,
          clipRange,
          aggregation,
        });
        assert.deepEqual(scrambled, result);
      }),
      { numRuns: 60 },
    );
  });

  it('requires oldValues with clipRange', () => {
    assert.throws(
      () => valueLoss({ ...hand, oldValues: undefined, clipRange: 0.2 }),
      /needs oldValues/,
    );
    assert.throws(() => valueLoss({ ...hand, clipRange: 0 }), /clipRange must be > 0/);
  });
});
