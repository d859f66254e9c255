import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { probabilityShiftByRank, RankShiftAccumulator } from './rank-shift.js';
import { assertClose } from './test-support/batches.js';

// Two positions over a 4-token vocabulary.
//   position 0: old [0.1, 0.6, 0.2, 0.1] → ranks: token 1, token 2, token 0 (tie with 3, lower id
//               first), token 3; new [0.05, 0.7, 0.15, 0.1] → shifts by rank +0.1, −0.05, −0.05, 0
//   position 1: old [0.25, 0.25, 0.4, 0.1] → ranks: token 2, token 0, token 1, token 3;
//               new [0.3, 0.25, 0.35, 0.1] → shifts by rank −0.05, +0.05, 0, 0
const oldProbsFull = [0.1, 0.6, 0.2, 0.1, 0.25, 0.25, 0.4, 0.1];
const newProbsFull = [0.05, 0.7, 0.15, 0.1, 0.3, 0.25, 0.35, 0.1];

describe('probabilityShiftByRank', () => {
  it('matches a hand computation with a tail bucket', () => {
    const [first, second, tail] = probabilityShiftByRank({
      oldProbsFull,
      newProbsFull,
      positions: 2,
      vocab: 4,
      rankBuckets: [1, 2, Infinity],
    });
    // Rank 1: shifts +0.1, −0.05 → mean 0.025, mass 0.05/2 positions = 0.025; old mean 0.5,
    // new mean (0.7 + 0.35)/2 = 0.525.
    assert.equal(first.lowestRank, 1);
    assert.equal(first.highestRank, 1);
    assertClose(first.meanShift, 0.025, { absolute: 1e-12 });
    assertClose(first.massShiftPerPosition, 0.025, { absolute: 1e-12 });
    assertClose(first.meanOldProbability, 0.5, { absolute: 1e-12 });
    assertClose(first.meanNewProbability, 0.525, { absolute: 1e-12 });
    assert.equal(first.tokenCount, 2);
    // Rank 2: −0.05, +0.05 → mean 0.
    assertClose(second.meanShift, 0, { absolute: 1e-12 });
    // Ranks 3..4: −0.05, 0, 0, 0 → mean −0.0125 over 4 tokens, mass −0.025 per position.
    assert.equal(tail.lowestRank, 3);
    assert.equal(tail.highestRank, 4);
    assertClose(tail.meanShift, -0.0125, { absolute: 1e-12 });
    assertClose(tail.massShiftPerPosition, -0.025, { absolute: 1e-12 });
    assert.equal(tail.tokenCount, 4);
  });

  it('leaves ranks past the last bound out and clamps bounds to the vocabulary', () => {
    // Buckets {1}, {2..3}: rank 4 is not counted. Ranks 2..3: −0.05, −0.05, +0.05, 0 → sum −0.05.
    const [, middle] = probabilityShiftByRank({
      oldProbsFull,
      newProbsFull,
      positions: 2,
      vocab: 4,
      rankBuckets: [1, 3],
    });
    assert.equal(middle.tokenCount, 4);
    assertClose(middle.massShiftPerPosition, -0.025, { absolute: 1e-12 });
    const clamped = probabilityShiftByRank({
      oldProbsFull,
      newProbsFull,
      positions: 2,
      vocab: 4,
      rankBuckets: [1, 2, 10, 20],
    });
    assert.equal(clamped.length, 3);
    assert.equal(clamped[2].highestRank, 4);
  });

  it('agrees with a full sort of every position (heap selection vs reference loop)', () => {
    const sample = fc
      .record({ positions: fc.integer({ min: 1, max: 4 }), vocab: fc.integer({ min: 1, max: 30 }) })
      .chain(({ positions, vocab }) =>
        fc.record({
          positions: fc.constant(positions),
          vocab: fc.constant(vocab),
          // Quantized so that ties happen often.
          oldProbs: fc.array(fc.integer({ min: 0, max: 5 }), {
            minLength: positions * vocab,
            maxLength: positions * vocab,
          }),
          newProbs: fc.array(fc.integer({ min: 0, max: 5 }), {
            minLength: positions * vocab,
            maxLength: positions * vocab,
          }),
          bounds: fc.uniqueArray(fc.integer({ min: 1, max: 35 }), { minLength: 1, maxLength: 4 }),
          withTail: fc.boolean(),
        }),
      );
    fc.assert(
      fc.property(sample, ({ positions, vocab, oldProbs, newProbs, bounds, withTail }) => {
        const rankBuckets = [...bounds.sort((a, b) => a - b), ...(withTail ? [Infinity] : [])];
        const result = probabilityShiftByRank({
          oldProbsFull: oldProbs.map((value) => value / 10),
          newProbsFull: newProbs.map((value) => value / 10),
          positions,
          vocab,
          rankBuckets,
        });
        const clamped: number[] = [];
        for (const bound of rankBuckets) {
          if (clamped.length === 0 || clamped[clamped.length - 1] < vocab)
            clamped.push(Math.min(bound, vocab));
        }
        assert.equal(result.length, clamped.length);
        clamped.forEach((high, bucket) => {
          const low = bucket === 0 ? 1 : clamped[bucket - 1] + 1;
          let shift = 0;
          let count = 0;
          for (let position = 0; position < positions; position++) {
            const order = Array.from({ length: vocab }, (_, token) => token).sort(
              (a, b) => oldProbs[position * vocab + b] - oldProbs[position * vocab + a] || a - b,
            );
            for (let rank = low; rank <= high; rank++) {
              const token = position * vocab + order[rank - 1];
              shift += (newProbs[token] - oldProbs[token]) / 10;
              count++;
            }
          }
          assert.equal(result[bucket].tokenCount, count);
          assertClose(result[bucket].massShiftPerPosition, shift / positions, { absolute: 1e-9 });
        });
      }),
    );
  });

  it('rejects malformed buckets and shapes', () => {
    const base = { oldProbsFull, newProbsFull, positions: 2, vocab: 4 };
    assert.throws(() => probabilityShiftByRank({ ...base, rankBuckets: [] }), /empty/);
    assert.throws(
      () => probabilityShiftByRank({ ...base, rankBuckets: [2, 2] }),
      /strictly increasing/,
    );
    assert.throws(
      () => probabilityShiftByRank({ ...base, rankBuckets: [1.5] }),
      /strictly increasing/,
    );
    assert.throws(
      () => probabilityShiftByRank({ ...base, vocab: 3, rankBuckets: [1] }),
      /positions, vocab/,
    );
  });
});

describe('RankShiftAccumulator', () => {
  it('gives exactly the numbers of one call, however the positions are chunked', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 2, max: 12 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 9 }),
        fc.integer({ min: 0, max: 1000 }),
        (positions, vocab, chunkSizes, seed) => {
          let state = seed;
          const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
          const row = () => {
            const values = Array.from({ length: vocab }, () => next());
            const total = values.reduce((a, b) => a + b, 0);
            return values.map((value) => value / total);
          };
          const old = Array.from({ length: positions }, row).flat();
          const updated = Array.from({ length: positions }, row).flat();
          const rankBuckets = [1, 2, 5, Infinity];
          const whole = probabilityShiftByRank({
            oldProbsFull: old,
            newProbsFull: updated,
            positions,
            vocab,
            rankBuckets,
          });
          const accumulator = new RankShiftAccumulator(vocab, rankBuckets);
          for (let start = 0, chunk = 0; start < positions; chunk++) {
            const size = Math.min(chunkSizes[chunk % chunkSizes.length]!, positions - start);
            accumulator.add({
              oldProbsFull: old.slice(start * vocab, (start + size) * vocab),
              newProbsFull: updated.slice(start * vocab, (start + size) * vocab),
              positions: size,
            });
            start += size;
          }
          assert.deepEqual(accumulator.result(), whole);
        },
      ),
    );
  });
  it("addRanked, given each position's top tokens and totals, gives the numbers of add", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 3, max: 14 }),
        fc.integer({ min: 0, max: 1000 }),
        (positions, vocab, seed) => {
          let state = seed;
          const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
          // Probabilities from a few levels, so that ties (broken by the lower id) occur.
          const row = () => Array.from({ length: vocab }, () => Math.floor(next() * 4) / 8);
          const old = Array.from({ length: positions }, row).flat();
          const updated = Array.from({ length: positions }, row).flat();
          const rankBuckets = [1, 2, 5, Infinity];
          const whole = new RankShiftAccumulator(vocab, rankBuckets);
          whole.add({ oldProbsFull: old, newProbsFull: updated, positions });
          const ranked = new RankShiftAccumulator(vocab, rankBuckets);
          const count = ranked.rankedCount;
          const topOld: number[] = [];
          const topNew: number[] = [];
          const oldTotals: number[] = [];
          const newTotals: number[] = [];
          for (let position = 0; position < positions; position++) {
            const offset = position * vocab;
            const ids = Array.from({ length: vocab }, (_, token) => token).sort(
              (a, b) => old[offset + b]! - old[offset + a]! || a - b,
            );
            for (const token of ids.slice(0, count)) {
              topOld.push(old[offset + token]!);
              topNew.push(updated[offset + token]!);
            }
            oldTotals.push(old.slice(offset, offset + vocab).reduce((a, b) => a + b, 0));
            newTotals.push(updated.slice(offset, offset + vocab).reduce((a, b) => a + b, 0));
          }
          ranked.addRanked({
            topOldProbabilities: topOld,
            topNewProbabilities: topNew,
            oldTotals,
            newTotals,
            positions,
          });
          assert.equal(count, vocab > 5 ? 5 : 2, 'the largest bound below vocab');
          assert.deepEqual(ranked.result(), whole.result());
        },
      ),
    );
  });
});
