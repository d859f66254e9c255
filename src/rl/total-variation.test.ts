import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ShapeError } from '../util/errors.js';
import { tokenKl } from './kl.js';
import { assertClose, floats, logSoftmaxRows } from './test-support/batches.js';
import { tokenTotalVariation } from './total-variation.js';

describe('tokenTotalVariation', () => {
  it('is half the L1 distance of each row', () => {
    const log = Math.log;
    const result = tokenTotalVariation({
      // Row 0: (0.5, 0.5) vs (0.8, 0.2) → 0.3.  Row 1: identical → 0.
      // Row 2: disjoint supports (−∞ is a probability of 0) → 1.
      oldLogProbsFull: [log(0.5), log(0.5), log(0.25), log(0.75), 0, -Infinity],
      newLogProbsFull: [log(0.8), log(0.2), log(0.25), log(0.75), -Infinity, 0],
      positions: 3,
      vocab: 2,
    });
    assertClose(result[0], 0.3, { absolute: 1e-7 });
    assert.equal(result[1], 0);
    assert.equal(result[2], 1);
  });

  it('keeps its digits for nearly equal rows, where p − q would cancel', () => {
    const step = 1e-9;
    const result = tokenTotalVariation({
      oldLogProbsFull: [Math.log(0.5), Math.log(0.5)],
      newLogProbsFull: [Math.log(0.5 + step), Math.log(0.5 - step)],
      positions: 1,
      vocab: 2,
    });
    assertClose(result[0], step, { relative: 1e-6 });
  });

  it('is symmetric, in [0, 1], and never above Pinsker’s √(KL/2)', () => {
    const tables = fc
      .record({ positions: fc.integer({ min: 1, max: 4 }), vocab: fc.integer({ min: 2, max: 6 }) })
      .chain(({ positions, vocab }) =>
        fc.record({
          positions: fc.constant(positions),
          vocab: fc.constant(vocab),
          oldLogits: floats(positions * vocab, -4, 4),
          newLogits: floats(positions * vocab, -4, 4),
        }),
      );
    fc.assert(
      fc.property(tables, ({ positions, vocab, oldLogits, newLogits }) => {
        const oldLogProbsFull = logSoftmaxRows(oldLogits, positions, vocab);
        const newLogProbsFull = logSoftmaxRows(newLogits, positions, vocab);
        const forward = tokenTotalVariation({ oldLogProbsFull, newLogProbsFull, positions, vocab });
        const backward = tokenTotalVariation({
          oldLogProbsFull: newLogProbsFull,
          newLogProbsFull: oldLogProbsFull,
          positions,
          vocab,
        });
        const kl = tokenKl({ oldLogProbsFull, newLogProbsFull, positions, vocab });
        for (let position = 0; position < positions; position++) {
          assertClose(forward[position], backward[position], { absolute: 1e-7 });
          assert.ok(forward[position] >= 0 && forward[position] <= 1);
          assert.ok(forward[position] <= Math.sqrt(kl[position] / 2) + 1e-6);
        }
      }),
    );
  });

  it('names the argument whose shape is wrong', () => {
    assert.throws(
      () =>
        tokenTotalVariation({
          oldLogProbsFull: [0, 0, 0],
          newLogProbsFull: [0, 0],
          positions: 1,
          vocab: 2,
        }),
      (error: unknown) =>
        error instanceof ShapeError && /oldLogProbsFull has 3/.test(error.message),
    );
  });
});
