import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { allocate, createRandom, viewOf, type RandomGenerator } from './random.js';

/**
 * sampleRows is specified as a JavaScript loop (Math.max, Math.exp, float64 sums left to right),
 * so every backend must give the same bits: the expected values here are that loop, written
 * out, and the comparisons are exact (`Object.is`), not within a tolerance.
 */
function definition(
  logits: Float32Array,
  rows: number,
  columns: number,
  uniforms: Float64Array,
): { tokens: number[]; maximum: number[]; total: number[] } {
  const result = { tokens: [] as number[], maximum: [] as number[], total: [] as number[] };
  for (let row = 0; row < rows; row++) {
    const values = Array.from(logits.subarray(row * columns, (row + 1) * columns));
    const maximum = values.reduce((best, value) => Math.max(best, value), -Infinity);
    const weights = values.map((value) => Math.exp(value - maximum));
    let total = 0;
    for (const weight of weights) total += weight;
    let token = -7; // the untouched sentinel of rows that draw nothing
    if (uniforms[row]! >= 0) {
      let threshold = uniforms[row]! * total;
      token = weights.findIndex((weight) => (threshold -= weight) < 0);
      if (token < 0)
        token = Math.max(
          0,
          weights.findLastIndex((weight) => weight > 0),
        );
    }
    result.tokens.push(token);
    result.maximum.push(maximum);
    result.total.push(total);
  }
  return result;
}

function float64View(values: ArrayLike<number>): Float64Array {
  const view = new Float64Array(values.length + 5).subarray(3, 3 + values.length);
  view.set(values);
  return view;
}

function checkRows(
  backend: KernelBackend,
  logits: Float32Array,
  rows: number,
  columns: number,
  uniforms: Float64Array,
  label: string,
): void {
  const tokens = new Int32Array(rows + 2).subarray(1, rows + 1).fill(-7);
  const maximum = allocate(rows);
  const total = float64View(new Array<number>(rows).fill(0));
  const logProbs = allocate(rows).fill(-7);
  backend.sampleRows({ logits, rows, columns, uniforms, tokens, maximum, total, logProbs });
  const expected = definition(logits, rows, columns, uniforms);
  const gathered = gatheredLogProbs(backend, logits, rows, columns, expected.tokens);
  for (let row = 0; row < rows; row++) {
    const where = `${label}, row ${row}`;
    assert.equal(tokens[row], expected.tokens[row], `${where}: token`);
    // A drawing row's log-prob is gatherLogProbs' for its token, to the bit; others untouched.
    const logProb = uniforms[row]! >= 0 ? gathered[row] : -7;
    assert.ok(
      Object.is(logProbs[row], logProb),
      `${where}: log-prob ${logProbs[row]} ≠ ${logProb} (gatherLogProbs)`,
    );
    assert.ok(
      Object.is(maximum[row], expected.maximum[row]),
      `${where}: maximum ${maximum[row]} ≠ ${expected.maximum[row]}`,
    );
    assert.ok(
      Object.is(total[row], expected.total[row]),
      `${where}: total ${total[row]} ≠ ${expected.total[row]}`,
    );
  }
}

/** This backend's gatherLogProbs of `tokens` (rows that draw nothing: token 0). */
function gatheredLogProbs(
  backend: KernelBackend,
  logits: Float32Array,
  rows: number,
  columns: number,
  tokens: readonly number[],
): Float32Array {
  const logProbs = allocate(rows);
  const targets = Int32Array.from(tokens, (token) => Math.max(0, token));
  backend.gatherLogProbs({
    logits,
    targets,
    rows,
    columns,
    logProbs,
    entropy: null,
    logSumExp: null,
  });
  return logProbs;
}

function uniformsFor(random: RandomGenerator, rows: number): Float64Array {
  return float64View(
    Array.from({ length: rows }, (_, row) => (row % 5 === 4 ? -1 : random.next())),
  );
}

/** The float32 neighbours of x, and x itself. */
function around(x: number): number[] {
  const bits = new Float32Array([x]);
  const word = new Uint32Array(bits.buffer);
  const result = [bits[0]!];
  for (const step of [-2, -1, 1, 2]) {
    const neighbour = new Uint32Array([word[0]! + step]);
    result.push(new Float32Array(neighbour.buffer)[0]!);
  }
  return result;
}

export function samplingTests(backend: KernelBackend): void {
  describe('sampleRows', () => {
    test('equals the JavaScript definition bit for bit on odd shapes and logit scales', () => {
      const random = createRandom(707);
      for (const [rows, columns] of [
        [1, 1],
        [1, 5],
        [3, 7],
        [7, 33],
        [6, 1000],
        [5, 4099],
      ] as const) {
        for (const scale of [0.01, 3, 200]) {
          const logits = allocate(rows * columns);
          for (let index = 0; index < logits.length; index++)
            logits[index] = random.normal() * scale + (index % 3);
          checkRows(
            backend,
            logits,
            rows,
            columns,
            uniformsFor(random, rows),
            `${rows}x${columns}, scale ${scale}`,
          );
        }
      }
    });

    test('every branch of exp: boundaries of the reductions, underflow, −∞, NaN, ±0', () => {
      // Row [m, m + v] exposes exp(v) in total = 1 + exp(v); v sweeps each branch boundary of
      // fdlibm's exp (2^−28, 0.5 ln2, 1.5 ln2, the vector path's −700, subnormal results,
      // underflow) and a log-spaced range between them.
      const offsets = [
        ...[2 ** -28, 0.34657359, 1.0397205352783203, 700, 708.39, 745.13, 746].flatMap(
          (boundary) => around(-boundary),
        ),
      ];
      // A rounding difference of one ulp in exp(v) shows in 1 + exp(v) only some of the time,
      // so the sweep is dense where exp(v) is visible next to 1 (v > −37): an FMA contracted
      // into the C code changes a few totals in 10⁵ (seen when the pragma was removed).
      const sweep = createRandom(29);
      for (let index = 0; index < 100_000; index++)
        offsets.push(-(10 ** (-9 + sweep.next() * 10.6)));
      for (const base of [0, 5, -3.25]) {
        const logits = viewOf(offsets.flatMap((offset) => [base, Math.fround(base + offset)]));
        const random = createRandom(11);
        const uniforms = float64View(offsets.map(() => random.next()));
        checkRows(backend, logits, offsets.length, 2, uniforms, `exp sweep at ${base}`);
      }
      const special = viewOf([
        ...[-Infinity, 3, -Infinity, 1, 2, 0, -1e30, 1e-30, 7],
        ...[Number.NaN, 1, 2, 3, 4, 5, 6, 7, 8],
        ...new Array<number>(9).fill(-Infinity),
        ...[-0, 0, -0, -0, -1, -2, -0, 0, -5],
        ...[-0, -0, -0, -0, -0, -0, -0, -0, -0],
        ...[1e30, -1e30, 1e30, 0, 0, 0, 0, 0, 1e30],
      ]);
      checkRows(backend, special, 6, 9, float64View([0.5, 0.5, 0.5, 0.3, 0.9, 0.7]), 'special');
    });

    test('uniforms at the ends of [0, 1) pick the first and the last token with weight', () => {
      const logits = viewOf([0, 1, 2, -Infinity, 0, 1, 2, -Infinity]);
      const uniforms = float64View([0, 1 - 2 ** -53]);
      checkRows(backend, logits, 2, 4, uniforms, 'ends');
      const tokens = new Int32Array(2);
      backend.sampleRows({
        logits,
        rows: 2,
        columns: 4,
        uniforms,
        tokens,
        maximum: allocate(2),
        total: float64View([0, 0]),
        logProbs: null,
      });
      assert.deepEqual([...tokens], [0, 2]);
    });
  });
}
