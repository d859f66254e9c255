/**
 * The AMX tiles' order of sums (native/src/matmul_bfloat16_tiles.c), written out here and
 * checked bit for bit: on the tiles where the host has them, and on AVX-512 lanes
 * (TEAMTR_AMX=lanes, any AVX-512 host) — the path a host without AMX takes to reproduce one
 * with it. A float32 a splits into three bfloat16 parts (the top 16 bits, then the top 16 of
 * what is left, twice); for each 32-value block of k and each part, TDPBF16PS sums the even and
 * the odd positions in two chains from zero, one fused multiply-add each in k order, and adds
 * (even + odd) to the part's total; subnormal inputs read as zero and subnormal results are
 * flushed. A row's total is (part 1 + part 2) + part 3, stored as alpha·total (+ C).
 *
 * Float32 arithmetic is emulated in float64 with Math.fround: a part has 8 significant bits
 * and a weight 8, so a product is exact, and a float32 plus such a product of a nearby
 * magnitude is exact in float64 before it is rounded once — what a fused multiply-add does.
 * alpha and beta are powers of two, so alpha·total + C is exact before its one rounding too.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { widenBfloat16 } from './bfloat16.js';
import { loadNativeBackend, nativeBuildInfo, nativeHost } from './native.js';
import { runInChild } from './testing/child-process.js';
import {
  nativeTileOrderResults,
  tileOrderCases,
  tileOrderInputs,
} from './testing/tile-order-cases.js';

const fround = Math.fround;
const smallestNormal = 2 ** -126;

/** Subnormal float32 values as zero (the tiles' DAZ and FTZ). */
const flush = (value: number): number => (Math.abs(value) < smallestNormal ? 0 : value);

const bits = new Uint32Array(1);
const asFloat = new Float32Array(bits.buffer);

/** The top 16 bits of a float32 (a bfloat16 value, by truncation). */
function truncate(value: number): number {
  asFloat[0] = value;
  bits[0] = bits[0]! & 0xffff0000;
  return asFloat[0];
}

/** The three bfloat16 parts of each value: a = a₁ + a₂ + a₃ exactly. */
function split(row: Float32Array): number[][] {
  const parts: number[][] = [[], [], []];
  for (const value of row) {
    let left = value;
    for (const part of parts) {
      const top = truncate(left);
      part.push(top);
      left = fround(left - top);
    }
  }
  return parts;
}

/** One entry of C in the tiles' order, before alpha and beta: weight(p) is B's entry at depth p. */
function tileOrderEntry(parts: number[][], weight: (p: number) => number): number {
  const totals = parts.map((part) => {
    let total = 0;
    for (let block = 0; block < part.length; block += 32) {
      let even = 0;
      let odd = 0;
      for (let p = block; p < block + 32; p += 2) {
        even = flush(fround(even + flush(part[p]!) * flush(weight(p))));
        odd = flush(fround(odd + flush(part[p + 1]!) * flush(weight(p + 1))));
      }
      total = flush(fround(total + flush(fround(even + odd))));
    }
    return total;
  });
  return fround(fround(totals[0]! + totals[1]!) + totals[2]!);
}

/** Every case's C in the tiles' order, from the cases' inputs. */
function expectedResults(): number[][] {
  return tileOrderCases.map(({ m, n, k, transposeB, alpha, beta }, index) => {
    const { a, b, start } = tileOrderInputs(index);
    const weights = widenBfloat16(b);
    const c: number[] = [];
    for (let row = 0; row < m; row++) {
      const parts = split(a.subarray(row * k, (row + 1) * k));
      for (let column = 0; column < n; column++) {
        const weight = transposeB
          ? (p: number) => weights[column * k + p]!
          : (p: number) => weights[p * n + column]!;
        const total = tileOrderEntry(parts, weight);
        const old = start[row * n + column]!;
        // beta other than 0 and 1 scales C first; alpha·total + C is then one fused rounding.
        c.push(beta === 0 ? fround(alpha * total) : fround(alpha * total + fround(old * beta)));
      }
    }
    return c;
  });
}

function assertResults(actual: number[][], label: string): void {
  const expected = expectedResults();
  tileOrderCases.forEach((testCase, index) => {
    const got = actual[index]!;
    const want = expected[index]!;
    for (let entry = 0; entry < want.length; entry++)
      assert.ok(
        Object.is(got[entry], want[entry]),
        `${label} ${JSON.stringify(testCase)}, entry ${entry}: ${got[entry]} against ${want[entry]}`,
      );
  });
}

const native = loadNativeBackend();
const lanesBuilt = nativeBuildInfo()?.vectorWidth === 16 && process.arch === 'x64';
const features = nativeHost()?.features ?? [];
const hostHasTiles = features.includes('amx_tile') && features.includes('amx_bf16');

describe('native bfloat16 product: the AMX tiles’ order', { skip: !native }, () => {
  test(
    'TEAMTR_AMX=lanes: AVX-512 lanes give every entry of the order written out',
    { skip: !lanesBuilt && 'the lanes path needs the AVX-512 build' },
    () => {
      const script =
        "import('./src/backend/testing/tile-order-cases.ts').then((m) => " +
        'console.log(JSON.stringify(m.nativeTileOrderResults())))';
      const run = runInChild(script, { TEAMTR_AMX: 'lanes' });
      assert.equal(run.status, 0, run.stderr);
      const { results, paths } = JSON.parse(run.stdout) as { results: number[][]; paths: string[] };
      assert.deepEqual(paths, ["AMX tiles' order on lanes (TEAMTR_AMX=lanes)"]);
      assertResults(results, 'lanes');
    },
  );

  test('by default the tiles where the host has AMX, the lanes’ order elsewhere', () => {
    const { results, paths } = nativeTileOrderResults();
    if (!hostHasTiles || process.env.TEAMTR_AMX === 'off') {
      assert.ok(!paths.some((name) => name.includes('AMX')), paths.join(', '));
      return;
    }
    assert.deepEqual(paths, ['AMX tiles (n % 16 = k % 32 = 0)']);
    assertResults(results, 'tiles');
  });

  test('the reference tells the orders apart: the lanes’ order gives other bits', () => {
    // The same sums in k order, one chain per part, would be another order: the check above
    // must see a difference between them.
    const index = tileOrderCases.findIndex(
      ({ m, k, transposeB }) => m === 1 && k === 576 && transposeB,
    );
    const { a, b } = tileOrderInputs(index);
    const weights = widenBfloat16(b);
    const parts = split(a.subarray(0, 576));
    let differs = 0;
    for (let column = 0; column < 80; column++) {
      let sequential = 0;
      for (let p = 0; p < 576; p++)
        sequential = fround(sequential + a[p]! * weights[column * 576 + p]!);
      if (sequential !== tileOrderEntry(parts, (p) => weights[column * 576 + p]!)) differs++;
    }
    assert.ok(differs > 10, `only ${differs} of 80 entries differ`);
  });
});
