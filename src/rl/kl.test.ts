import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ShapeError } from '../util/errors.js';
import { entropyFromLogProbs, meanTokenKl, tokenKl, tokenKlGradient } from './kl.js';
import {
  assertAllClose,
  assertClose,
  floats,
  logSoftmaxRows,
  scrambleMasked,
} from './test-support/batches.js';

const log = (values: number[]) => Float64Array.from(values, Math.log);

/** Σ p·(log p − log q) written directly, the reference for normalized float64 inputs. */
function naiveKl(
  oldLogProbs: ArrayLike<number>,
  newLogProbs: ArrayLike<number>,
  positions: number,
  vocab: number,
) {
  return Array.from({ length: positions }, (_, position) => {
    let sum = 0;
    for (let token = position * vocab; token < (position + 1) * vocab; token++) {
      if (oldLogProbs[token] === -Infinity) continue;
      sum += Math.exp(oldLogProbs[token]) * (oldLogProbs[token] - newLogProbs[token]);
    }
    return sum;
  });
}

describe('tokenKl', () => {
  it('matches the Bernoulli closed form', () => {
    // KL(Bern(0.3) ‖ Bern(0.6)) = 0.3·ln(0.3/0.6) + 0.7·ln(0.7/0.4)
    //   = 0.3·(−0.6931471805599453) + 0.7·0.5596157879354227 = 0.1837868973868123
    // and the second position KL(Bern(0.5) ‖ Bern(0.9)) = 0.5·ln(0.5/0.9) + 0.5·ln(0.5/0.1)
    //   = 0.5·(−0.5877866649021191) + 0.5·1.6094379124341003 = 0.5108256237659907
    const kl = tokenKl({
      oldLogProbsFull: log([0.3, 0.7, 0.5, 0.5]),
      newLogProbsFull: log([0.6, 0.4, 0.9, 0.1]),
      positions: 2,
      vocab: 2,
    });
    assertAllClose(kl, [0.1837868973868123, 0.5108256237659907], { relative: 1e-6 });
  });

  /** Two random [positions, vocab] logit tables; the second is sometimes a tiny perturbation. */
  const logitPairs = fc
    .record({ positions: fc.integer({ min: 1, max: 5 }), vocab: fc.integer({ min: 2, max: 40 }) })
    .chain(({ positions, vocab }) =>
      fc.record({
        positions: fc.constant(positions),
        vocab: fc.constant(vocab),
        first: floats(positions * vocab, -8, 8),
        second: floats(positions * vocab, -8, 8),
        closeness: fc.constantFrom(1, 1e-3, 1e-6),
      }),
    );

  it('is exactly 0 for identical distributions and ≥ 0 always, even from float32 log-probs', () => {
    // For nearly equal float32 rows, Σ p·(log p − log q) comes out negative about half the time
    // (rows are not exactly normalized); the per-term form must not.
    fc.assert(
      fc.property(logitPairs, ({ positions, vocab, first, second, closeness }) => {
        const perturbed = first.map((value, index) => value + closeness * second[index]);
        const old32 = Float32Array.from(logSoftmaxRows(first, positions, vocab));
        const new32 = Float32Array.from(logSoftmaxRows(perturbed, positions, vocab));
        const same = tokenKl({ oldLogProbsFull: old32, newLogProbsFull: old32, positions, vocab });
        assert.deepEqual([...same], new Array(positions).fill(0));
        for (const value of tokenKl({
          oldLogProbsFull: old32,
          newLogProbsFull: new32,
          positions,
          vocab,
        })) {
          assert.ok(value >= 0, `KL ${value} < 0`);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('equals Σ p·(log p − log q) for normalized float64 rows (two forms agree)', () => {
    fc.assert(
      fc.property(logitPairs, ({ positions, vocab, first, second, closeness }) => {
        const oldLogProbs = logSoftmaxRows(first, positions, vocab);
        const newLogProbs = logSoftmaxRows(
          first.map((value, index) => value + closeness * second[index]),
          positions,
          vocab,
        );
        const kl = tokenKl({
          oldLogProbsFull: oldLogProbs,
          newLogProbsFull: newLogProbs,
          positions,
          vocab,
        });
        assertAllClose(kl, naiveKl(oldLogProbs, newLogProbs, positions, vocab), {
          absolute: 1e-12,
          relative: 1e-6,
        });
      }),
      { numRuns: 200 },
    );
  });

  it('handles zero probabilities and extreme logits without NaN', () => {
    // p = [0, 1], q = [0.5, 0.5]: KL = 1·ln(1/0.5) = ln 2.
    const zeroOld = tokenKl({
      oldLogProbsFull: [-Infinity, 0],
      newLogProbsFull: log([0.5, 0.5]),
      positions: 1,
      vocab: 2,
    });
    assertClose(zeroOld[0], Math.LN2, { relative: 1e-6 });
    // q has a zero where p does not: KL = +∞.
    const zeroNew = tokenKl({
      oldLogProbsFull: log([0.5, 0.5]),
      newLogProbsFull: [0, -Infinity],
      positions: 1,
      vocab: 2,
    });
    assert.equal(zeroNew[0], Infinity);
    // Logits [0, −800] vs [−800, 0]: p ≈ (1, e^−800), q ≈ (e^−800, 1); KL ≈ 800 (e^−800 underflows).
    const extreme = tokenKl({
      oldLogProbsFull: logSoftmaxRows([0, -800], 1, 2),
      newLogProbsFull: logSoftmaxRows([-800, 0], 1, 2),
      positions: 1,
      vocab: 2,
    });
    assertClose(extreme[0], 800, { relative: 1e-6 });
  });

  it('gives the same values chunk by chunk as on the whole table', () => {
    const positions = 6;
    const vocab = 7;
    const oldLogProbs = logSoftmaxRows(
      Float64Array.from({ length: 42 }, (_, i) => Math.sin(i)),
      positions,
      vocab,
    );
    const newLogProbs = logSoftmaxRows(
      Float64Array.from({ length: 42 }, (_, i) => Math.cos(i)),
      positions,
      vocab,
    );
    const whole = tokenKl({
      oldLogProbsFull: oldLogProbs,
      newLogProbsFull: newLogProbs,
      positions,
      vocab,
    });
    const chunked = [0, 2, 5].flatMap((start, index, starts) => {
      const end = starts[index + 1] ?? positions;
      return [
        ...tokenKl({
          oldLogProbsFull: oldLogProbs.subarray(start * vocab, end * vocab),
          newLogProbsFull: newLogProbs.subarray(start * vocab, end * vocab),
          positions: end - start,
          vocab,
        }),
      ];
    });
    assert.deepEqual(chunked, [...whole]);
  });

  it('rejects tables that are not [positions, vocab]', () => {
    assert.throws(
      () => tokenKl({ oldLogProbsFull: [0, 0], newLogProbsFull: [0], positions: 1, vocab: 2 }),
      ShapeError,
    );
  });
});

describe('tokenKlGradient', () => {
  it('is π_new − π_old, matching finite differences of KL(π_old ‖ softmax(z)) in z', () => {
    const positions = 3;
    const vocab = 5;
    const oldLogits = Float64Array.from({ length: 15 }, (_, i) => Math.sin(3 * i));
    const newLogits = Float64Array.from({ length: 15 }, (_, i) => Math.cos(2 * i));
    const oldLogProbs = logSoftmaxRows(oldLogits, positions, vocab);
    const gradKl = [1, -0.5, 2];
    const analytic = tokenKlGradient({
      oldLogProbsFull: oldLogProbs,
      newLogProbsFull: logSoftmaxRows(newLogits, positions, vocab),
      positions,
      vocab,
      gradKl,
    });
    const objective = (logits: Float64Array) => {
      const naive = naiveKl(
        oldLogProbs,
        logSoftmaxRows(logits, positions, vocab),
        positions,
        vocab,
      );
      return naive.reduce((sum, value, position) => sum + gradKl[position] * value, 0);
    };
    const step = 1e-6;
    for (let index = 0; index < newLogits.length; index++) {
      const plus = Float64Array.from(newLogits);
      const minus = Float64Array.from(newLogits);
      plus[index] += step;
      minus[index] -= step;
      const numeric = (objective(plus) - objective(minus)) / (2 * step);
      assertClose(analytic[index], numeric, { absolute: 1e-7, relative: 1e-5 }, `logit ${index}`);
    }
  });
});

describe('meanTokenKl', () => {
  it('averages over masked tokens only', () => {
    // Masked values 0.1, 0.3, 0.2: mean 0.2, max 0.3.
    const result = meanTokenKl({ perTokenKl: [0.1, 0.3, NaN, 0.2], mask: [1, 1, 0, 1], rows: 2 });
    assertClose(result.mean, 0.2, { absolute: 1e-12 });
    assert.equal(result.max, 0.3);
    assert.equal(result.tokenCount, 3);
    const scrambled = meanTokenKl({
      perTokenKl: scrambleMasked([0.1, 0.3, 5, 0.2], [1, 1, 0, 1], [9]),
      mask: [1, 1, 0, 1],
      rows: 2,
    });
    assert.deepEqual(scrambled, result);
    assert.ok(Number.isNaN(meanTokenKl({ perTokenKl: [1], mask: [0], rows: 1 }).mean));
  });
});

describe('entropyFromLogProbs', () => {
  it('matches known entropies', () => {
    // Uniform over 4: ln 4 = 1.3862943611198906. Bernoulli(0.3): −0.3 ln 0.3 − 0.7 ln 0.7 =
    // 0.3612010... + 0.2496633... = 0.6108643020548935. One-hot: 0.
    const entropy = entropyFromLogProbs({
      logProbsFull: [
        ...log([0.25, 0.25, 0.25, 0.25]),
        ...log([0.3, 0.7, 0, 0]),
        0,
        -Infinity,
        -Infinity,
        -Infinity,
      ],
      positions: 3,
      vocab: 4,
    });
    assertAllClose(entropy, [Math.log(4), 0.6108643020548935, 0], { relative: 1e-6 });
  });
});
