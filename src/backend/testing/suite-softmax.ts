import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { finiteDifferenceGradient, weightedSum } from './finite-difference.js';
import { allocate, createRandom, int32ViewOf, randomArray, viewOf } from './random.js';
import { gatherLogProbs64, logSoftmax64, softmax64 } from './reference64.js';

const TOLERANCE = { relative: 1e-5, absolute: 1e-6 };
const SHAPES = [
  [1, 1],
  [1, 5],
  [7, 33],
  [3, 1000],
  [2, 129],
];

/** Logits with the awkward values: ±1e4, −∞ (masked) entries, and ordinary ones. */
function extremeLogits(): { logits: Float32Array; rows: number; columns: number } {
  const rows = 4;
  const columns = 5;
  const logits = viewOf([
    ...[1e4, -1e4, 0, 1e4 - 1, 5],
    ...[-1e4, -1e4 + 2, -1e4 - 1, -1e4, -1e4],
    ...[-Infinity, 3, -Infinity, 1, 2],
    ...[30, -Infinity, 0, -Infinity, -Infinity],
  ]);
  return { logits, rows, columns };
}

export function softmaxTests(backend: KernelBackend): void {
  describe('softmax and logSoftmax', () => {
    test('match the float64 reference on random rows of awkward widths', () => {
      const random = createRandom(101);
      for (const [rows, columns] of SHAPES) {
        const input = randomArray(random, rows * columns, 3);
        const output = allocate(rows * columns);
        backend.softmax({ input, output, rows, columns });
        assertClose(
          output,
          softmax64(input, rows, columns),
          TOLERANCE,
          `softmax ${rows}x${columns}`,
        );
        backend.logSoftmax({ input, output, rows, columns });
        assertClose(
          output,
          logSoftmax64(input, rows, columns),
          TOLERANCE,
          `logSoftmax ${rows}x${columns}`,
        );
      }
    });

    test('large logits (±1e4) and −∞ entries do not overflow', () => {
      const { logits, rows, columns } = extremeLogits();
      const output = allocate(rows * columns);
      backend.softmax({ input: logits, output, rows, columns });
      assertClose(output, softmax64(logits, rows, columns), TOLERANCE, 'softmax extreme');
      backend.logSoftmax({ input: logits, output, rows, columns });
      assertClose(output, logSoftmax64(logits, rows, columns), TOLERANCE, 'logSoftmax extreme');
      assert.equal(output[10], -Infinity, 'a −∞ logit has log-probability −∞');
    });

    test('work in place (output aliasing input)', () => {
      const random = createRandom(102);
      const data = randomArray(random, 3 * 40, 2);
      const expected = softmax64(data, 3, 40);
      backend.softmax({ input: data, output: data, rows: 3, columns: 40 });
      assertClose(data, expected, TOLERANCE, 'softmax in place');
      const other = randomArray(random, 3 * 40, 2);
      const expectedLog = logSoftmax64(other, 3, 40);
      backend.logSoftmax({ input: other, output: other, rows: 3, columns: 40 });
      assertClose(other, expectedLog, TOLERANCE, 'logSoftmax in place');
    });

    test('a NaN makes its own row NaN and leaves other rows alone', () => {
      const input = viewOf([1, NaN, 2, 0.5, 0.25, 0]);
      const output = allocate(6);
      for (const kernel of [backend.softmax, backend.logSoftmax]) {
        kernel({ input, output, rows: 2, columns: 3 });
        assert.ok(output.subarray(0, 3).every(Number.isNaN), `row 0: ${Array.from(output)}`);
        assert.ok(output.subarray(3).every(Number.isFinite), `row 1: ${Array.from(output)}`);
      }
    });
  });

  describe('gatherLogProbs', () => {
    test('log-probabilities, entropy and logsumexp match the reference', () => {
      const random = createRandom(103);
      for (const [rows, columns] of SHAPES) {
        const logits = randomArray(random, rows * columns, 4);
        const targets = int32ViewOf(Array.from({ length: rows }, () => random.integer(columns)));
        checkForward(backend, logits, targets, rows, columns);
      }
    });

    test('large and −∞ logits stay finite where the answer is finite', () => {
      const { logits, rows, columns } = extremeLogits();
      const targets = int32ViewOf([3, 1, 4, 2]);
      const result = checkForward(backend, logits, targets, rows, columns);
      assert.ok(result.logProbs.every(Number.isFinite));
      assert.ok(result.entropy.every(Number.isFinite));
    });

    test('optional outputs may be null; a target outside the row throws RangeError', () => {
      const logits = viewOf([1, 2, 3, 4]);
      const logProbs = allocate(2);
      const base = { logits, rows: 2, columns: 2, logProbs, entropy: null, logSumExp: null };
      backend.gatherLogProbs({ ...base, targets: int32ViewOf([1, 0]) });
      assertClose(logProbs, gatherLogProbs64(logits, [1, 0], 2, 2).logProbs, TOLERANCE, 'logProbs');
      assert.throws(
        () => backend.gatherLogProbs({ ...base, targets: int32ViewOf([2, 0]) }),
        RangeError,
      );
      assert.throws(
        () => backend.gatherLogProbs({ ...base, targets: int32ViewOf([0, -1]) }),
        RangeError,
      );
    });

    test('backward matches finite differences of the log-probability and entropy terms', () => {
      const random = createRandom(104);
      for (const [rows, columns, withEntropy] of [
        [3, 7, 1],
        [2, 130, 0],
        [1, 2, 1],
      ] as const) {
        const logits = randomArray(random, rows * columns, 2);
        logits[columns - 1] = -Infinity;
        const targets = int32ViewOf(
          Array.from({ length: rows }, () => random.integer(columns - 1)),
        );
        checkBackward(backend, {
          logits,
          targets,
          rows,
          columns,
          withEntropy: withEntropy === 1,
          seed: rows,
        });
      }
    });

    test('backward with extreme logits is finite and rows with zero gradient are untouched', () => {
      const { logits, rows, columns } = extremeLogits();
      const targets = int32ViewOf([3, 1, 4, 2]);
      const logSumExp = viewOf(gatherLogProbs64(logits, targets, rows, columns).logSumExp);
      const gradLogits = allocate(rows * columns).fill(0.5);
      backend.gatherLogProbsBackward({
        logits,
        targets,
        rows,
        columns,
        logSumExp,
        gradLogProbs: viewOf([1, 0, -1, 2]),
        gradEntropy: viewOf([0.5, 0, 1, -1]),
        gradLogits,
      });
      assert.ok(gradLogits.every(Number.isFinite), `finite: ${Array.from(gradLogits)}`);
      assert.deepEqual(Array.from(gradLogits.subarray(5, 10)), [0.5, 0.5, 0.5, 0.5, 0.5]);
      assert.equal(gradLogits[10], 0.5, 'a −∞ logit gets no gradient');
    });
  });
}

function checkForward(
  backend: KernelBackend,
  logits: Float32Array,
  targets: Int32Array,
  rows: number,
  columns: number,
): { logProbs: Float32Array; entropy: Float32Array } {
  const logProbs = allocate(rows);
  const entropy = allocate(rows);
  const logSumExp = allocate(rows);
  backend.gatherLogProbs({ logits, targets, rows, columns, logProbs, entropy, logSumExp });
  const expected = gatherLogProbs64(logits, targets, rows, columns);
  const label = `gatherLogProbs ${rows}x${columns}`;
  assertClose(logProbs, expected.logProbs, TOLERANCE, `${label} logProbs`);
  assertClose(entropy, expected.entropy, { relative: 1e-5, absolute: 1e-5 }, `${label} entropy`);
  assertClose(logSumExp, expected.logSumExp, TOLERANCE, `${label} logSumExp`);
  return { logProbs, entropy };
}

function checkBackward(
  backend: KernelBackend,
  options: {
    logits: Float32Array;
    targets: Int32Array;
    rows: number;
    columns: number;
    withEntropy: boolean;
    seed: number;
  },
): void {
  const { logits, targets, rows, columns, withEntropy } = options;
  const random = createRandom(options.seed);
  const gradLogProbs = randomArray(random, rows);
  const gradEntropy = withEntropy ? randomArray(random, rows) : null;
  const loss = (values: Float64Array): number => {
    const result = gatherLogProbs64(values, targets, rows, columns);
    return (
      weightedSum(result.logProbs, gradLogProbs) +
      (gradEntropy ? weightedSum(result.entropy, gradEntropy) : 0)
    );
  };
  const expected = finiteDifferenceGradient(loss, logits);
  expected[columns - 1] = 0; // the −∞ logit: finite differences there are NaN, the true gradient 0
  const initial = randomArray(random, rows * columns);
  const gradLogits = viewOf(initial);
  const logSumExp = viewOf(gatherLogProbs64(logits, targets, rows, columns).logSumExp);
  backend.gatherLogProbsBackward({
    logits,
    targets,
    rows,
    columns,
    logSumExp,
    gradLogProbs,
    gradEntropy,
    gradLogits,
  });
  const accumulated = expected.map((value, index) => value + initial[index]);
  assertClose(
    gradLogits,
    accumulated,
    { relative: 1e-4, absolute: 1e-5 },
    `gatherLogProbsBackward ${rows}x${columns}`,
  );
}
