import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { createRandom, viewOf, type RandomGenerator } from './random.js';

interface Comparison {
  kl: Float32Array;
  totalVariation: Float32Array;
  topTokens: Int32Array;
  oldTotal: Float64Array;
  newTotal: Float64Array;
}

/** The kernel's outputs, in views at an offset (as every suite passes them). */
function compare(
  backend: KernelBackend,
  oldLogProbs: Float32Array,
  newLogProbs: Float32Array,
  rows: number,
  columns: number,
  topCount: number,
): Comparison {
  const doubles = () => new Float64Array(rows + 3).subarray(2, 2 + rows);
  const result = {
    kl: viewOf(new Array<number>(rows).fill(-7)),
    totalVariation: viewOf(new Array<number>(rows).fill(-7)),
    topTokens: new Int32Array(rows * topCount + 3).subarray(1, 1 + rows * topCount).fill(-7),
    oldTotal: doubles(),
    newTotal: doubles(),
  };
  backend.compareLogDistributions({ oldLogProbs, newLogProbs, rows, columns, topCount, ...result });
  return result;
}

/**
 * The definition, written plainly in float64 and apart from the reference backend: KL as
 * Σ p·(d + expm1(−d)) (the inputs here never make e^(−d) overflow), TV as ½ Σ |p − q|, the
 * −∞ cases by their limits, the top tokens by sorting every id.
 */
function definition(
  oldLogProbs: Float32Array,
  newLogProbs: Float32Array,
  rows: number,
  columns: number,
  topCount: number,
): Comparison {
  const result: Comparison = {
    kl: new Float32Array(rows),
    totalVariation: new Float32Array(rows),
    topTokens: new Int32Array(rows * topCount),
    oldTotal: new Float64Array(rows),
    newTotal: new Float64Array(rows),
  };
  for (let row = 0; row < rows; row++) {
    let kl = 0;
    let variation = 0;
    for (let column = 0; column < columns; column++) {
      const a = oldLogProbs[row * columns + column]!;
      const b = newLogProbs[row * columns + column]!;
      const [p, q] = [Math.exp(a), Math.exp(b)];
      if (a !== -Infinity) kl += b === -Infinity ? Infinity : p * (a - b + Math.expm1(b - a));
      else kl += q;
      variation += Math.abs(p - q);
      result.oldTotal[row] += p;
      result.newTotal[row] += q;
    }
    result.kl[row] = kl;
    result.totalVariation[row] = Math.min(1, variation / 2);
    const ids = Array.from({ length: columns }, (_, column) => column)
      .filter((column) => !Number.isNaN(oldLogProbs[row * columns + column]))
      .sort((x, y) => oldLogProbs[row * columns + y]! - oldLogProbs[row * columns + x]! || x - y);
    for (let rank = 0; rank < topCount; rank++)
      result.topTokens[row * topCount + rank] = ids[rank] ?? -1;
  }
  return result;
}

/** log-softmax in float64 of `rows` rows of normal logits times `scale`, rounded to float32. */
function logDistributions(
  random: RandomGenerator,
  rows: number,
  columns: number,
  scale: number,
  base?: Float32Array,
  shift = 0,
): Float32Array {
  const logits = Array.from(
    { length: rows * columns },
    (_, index) => (base ? base[index]! : 0) + random.normal() * (base ? shift : scale),
  );
  for (let row = 0; row < rows; row++) {
    const slice = logits.slice(row * columns, (row + 1) * columns);
    const maximum = Math.max(...slice);
    const logSum = maximum + Math.log(slice.reduce((sum, x) => sum + Math.exp(x - maximum), 0));
    for (let column = 0; column < columns; column++) logits[row * columns + column]! -= logSum;
  }
  return viewOf(logits);
}

const CLOSE = { relative: 1e-6, absolute: 1e-12 };

function assertMatchesDefinition(
  actual: Comparison,
  expected: Comparison,
  label: string,
  totals = { relative: 1e-13 },
): void {
  assertClose(actual.kl, expected.kl, CLOSE, `${label}: kl`);
  assertClose(actual.totalVariation, expected.totalVariation, CLOSE, `${label}: totalVariation`);
  assertClose(actual.oldTotal, expected.oldTotal, totals, `${label}: oldTotal`);
  assertClose(actual.newTotal, expected.newTotal, totals, `${label}: newTotal`);
  assert.deepEqual([...actual.topTokens], [...expected.topTokens], `${label}: topTokens`);
}

export function distributionComparisonTests(backend: KernelBackend): void {
  describe('compareLogDistributions', () => {
    test('matches the definition on random rows of odd widths (vector tails) and top counts', () => {
      const random = createRandom(4242);
      for (const [rows, columns] of [
        [1, 1],
        [2, 5],
        [3, 17],
        [4, 33],
        [2, 1000],
        [3, 4099],
      ] as const) {
        for (const shift of [0.3, 3]) {
          const old = logDistributions(random, rows, columns, 3);
          const current = logDistributions(random, rows, columns, 3, old, shift);
          for (const topCount of [0, 1, 10]) {
            const label = `${rows}x${columns}, shift ${shift}, top ${topCount}`;
            assertMatchesDefinition(
              compare(backend, old, current, rows, columns, topCount),
              definition(old, current, rows, columns, topCount),
              label,
            );
          }
        }
      }
    });

    test('−∞ entries and one-hot rows take their limits: KL +∞ where q = 0 < p, TV 1 apart', () => {
      const columns = 21;
      const random = createRandom(7);
      const smooth = logDistributions(random, 1, columns, 2);
      const oneHot = (token: number) =>
        Array.from({ length: columns }, (_, column) => (column === token ? 0 : -Infinity));
      const masked = Array.from(smooth, (value, column) => (column % 4 === 1 ? -Infinity : value));
      const maskedSum = masked.reduce((sum, value) => sum + Math.exp(value), 0);
      const renormalized = masked.map((value) => value - Math.log(maskedSum));
      const rows = [
        [oneHot(2), [...smooth]],
        [[...smooth], oneHot(20)],
        [oneHot(5), oneHot(5)],
        [oneHot(5), oneHot(6)],
        [renormalized, [...smooth]],
        [[...smooth], renormalized],
        [renormalized, renormalized],
      ];
      const old = viewOf(rows.flatMap(([first]) => first!));
      const current = viewOf(rows.flatMap(([, second]) => second!));
      const actual = compare(backend, old, current, rows.length, columns, 3);
      assertMatchesDefinition(actual, definition(old, current, rows.length, columns, 3), 'limits');
      // By hand: a one-hot π_old at token 2 has KL = −log q₂ and TV = 1 − q₂.
      assertClose([actual.kl[0]!], [-smooth[2]!], CLOSE, 'one-hot old: kl');
      assertClose([actual.totalVariation[0]!], [1 - Math.exp(smooth[2]!)], CLOSE, 'one-hot TV');
      assert.deepEqual([actual.kl[1], actual.kl[3], actual.kl[5]], [Infinity, Infinity, Infinity]);
      assert.deepEqual([actual.kl[2], actual.totalVariation[2], actual.kl[6]], [0, 0, 0]);
      assert.equal(actual.totalVariation[3], 1);
      // A one-hot row ranks its token first, then the −∞ entries by id.
      assert.deepEqual([...actual.topTokens.subarray(0, 3)], [2, 0, 1]);
    });

    test('p ≈ q: identical rows give exactly 0, rows one float32 step apart a KL of ~p·d²/2', () => {
      const random = createRandom(99);
      const [rows, columns] = [3, 515];
      const old = logDistributions(random, rows, columns, 4);
      const nudged = old.map((value, index) => {
        if (index % 3 !== 0) return value;
        const bits = new Int32Array(new Float32Array([value]).buffer);
        bits[0]! += index % 2 === 0 ? 1 : -1;
        return new Float32Array(bits.buffer)[0]!;
      });
      const same = compare(backend, old, viewOf(old), rows, columns, 2);
      assert.deepEqual([...same.kl, ...same.totalVariation], new Array<number>(2 * rows).fill(0));
      const near = compare(backend, old, viewOf(nudged), rows, columns, 2);
      const expected = definition(old, nudged, rows, columns, 2);
      for (let row = 0; row < rows; row++)
        assert.ok(near.kl[row]! > 0 && near.kl[row]! < 1e-12, `row ${row}: kl ${near.kl[row]}`);
      assertMatchesDefinition(near, expected, 'one step apart');
    });

    test('ties rank the lower id first; NaN entries are never ranked and make the row NaN', () => {
      const old = viewOf([
        ...[-2, -1, -3, -1, -1, -2, -1, -5],
        ...[-1, Number.NaN, -0.5, Number.NaN, -3, -0.5, -9, -1],
      ]);
      const current = viewOf(new Array<number>(16).fill(-2.0794415416798357));
      const result = compare(backend, old, current, 2, 8, 5);
      assert.deepEqual([...result.topTokens.subarray(0, 5)], [1, 3, 4, 6, 0]);
      assert.deepEqual([...result.topTokens.subarray(5)], [2, 5, 0, 7, 4]);
      for (const key of ['kl', 'totalVariation', 'oldTotal'] as const)
        assert.ok(Number.isNaN(result[key][1]) && !Number.isNaN(result[key][0]), key);
    });

    test('more places than entries are filled with −1; topCount 0 writes no ids', () => {
      const old = viewOf([-1, -0.5, -Infinity]);
      const result = compare(backend, old, viewOf([-0.5, -1, -Infinity]), 1, 3, 5);
      assert.deepEqual([...result.topTokens], [1, 0, 2, -1, -1]);
      const none = compare(backend, old, viewOf([-0.5, -1, -Infinity]), 1, 3, 0);
      assert.equal(none.topTokens.length, 0);
    });

    test('e^x in float64 within a few ulp, from deep underflow to above 0', () => {
      // Rows of one entry: oldTotal is e^x itself. The points straddle the reduction's
      // boundaries (multiples of ln2/2), the normal/subnormal edge and the underflow to 0.
      const points: number[] = [0, -0, 1e-30, -1e-30, 0.25, -745.2, -746, -Infinity];
      for (let multiple = -2150; multiple <= 2; multiple++) {
        const boundary = (multiple * Math.LN2) / 2;
        if (boundary < -746) continue;
        for (const offset of [-1e-5, 0, 1e-5]) points.push(Math.fround(boundary + offset));
      }
      const random = createRandom(5);
      for (let index = 0; index < 2000; index++) points.push(Math.fround(-random.next() * 40));
      const values = viewOf(points);
      const result = compare(backend, values, values, points.length, 1, 0);
      points.forEach((point, row) => {
        const x = Math.fround(point);
        const want = Math.exp(x);
        const got = result.oldTotal[row]!;
        const ulp = Math.max(2 ** -1074, want * 2 ** -52);
        assert.ok(Math.abs(got - want) <= 4 * ulp, `e^${x}: ${got} vs Math.exp ${want}`);
      });
    });
  });
}
