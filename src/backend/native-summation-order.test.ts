/**
 * The native bfloat16-weight product sums each entry of C in the order its header documents
 * (native/src/matmul_bfloat16.c), checked bit for bit against that order written out here:
 * VECTOR_WIDTH lane sums over k (lane l takes p = l, l + W, …, one FMA each), the lanes added
 * by simd.h's butterfly tree (stage w = W/2, …, 1 adds lane j and lane j + w of the running
 * halves), then the k % W tail one FMA at a time. The kernel's speed-ups (cheaper shuffles for
 * the tree, how C is cut into tasks) must not move a bit of it: sampled = scored log-probs
 * rest on every path summing this way.
 *
 * Float32 arithmetic is emulated in float64 with Math.fround, which is exact for the values
 * used: `a` has 12 significant bits and bfloat16 weights 8, so a product has at most 20, and
 * with magnitudes within a few powers of two every sum of a float32 and such a product is exact
 * in float64 before it is rounded once to float32 — which is what an FMA does. The float32
 * roundings themselves do happen (accumulators need more than 24 bits), so another order gives
 * other bits.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { roundToBfloat16, widenBfloat16 } from './bfloat16.js';
import { loadNativeBackend, nativeBuildInfo, nativeKernelPaths } from './native.js';
import { createRandom, type RandomGenerator } from './testing/random.js';

const fround = Math.fround;

/** Numbers in ±[0.5, 2) with `bits` significant bits. */
function coarseValues(random: RandomGenerator, length: number, bits: number): Float32Array {
  const values = new Float32Array(length);
  const scale = 2 ** (bits - 1);
  for (let index = 0; index < length; index++) {
    const mantissa = scale + random.integer(scale); // [2^(bits-1), 2^bits)
    const sign = random.next() < 0.5 ? -1 : 1;
    values[index] = (sign * mantissa) / scale / (random.next() < 0.5 ? 2 : 1);
  }
  return values;
}

/**
 * The lane sums' butterfly (simd.h vsum_rows): each stage folds the running sums in half,
 * adding sum j to sum j + half (lanes 0..7 to 8..15 first with 16 lanes, then 0..3 to 4..7, …).
 */
function treeSum(lanes: readonly number[]): number {
  let sums = lanes.slice();
  while (sums.length > 1) {
    const half = sums.length / 2;
    sums = sums.slice(0, half).map((sum, j) => fround(sum + sums[j + half]!));
  }
  return sums[0]!;
}

/** One entry of C = A·Bᵀ in the documented order. */
function documentedEntry(a: Float32Array, b: Float32Array, width: number): number {
  const k = a.length;
  const lanes = new Array<number>(width).fill(0);
  let p = 0;
  for (; p + width <= k; p += width) {
    for (let lane = 0; lane < width; lane++)
      lanes[lane] = fround(lanes[lane]! + a[p + lane]! * b[p + lane]!);
  }
  let total = treeSum(lanes);
  for (; p < k; p++) total = fround(total + a[p]! * b[p]!);
  return total;
}

const native = loadNativeBackend();
const width = nativeBuildInfo()?.vectorWidth ?? 0;

/** Asserts every column of `rows` of C [m×n] = A·Bᵀ equals the documented order's sum. */
function assertRowsInDocumentedOrder(
  product: { a: Float32Array; weights: Float32Array; c: Float32Array; n: number; k: number },
  rows: readonly number[],
  label: string,
): void {
  const { a, weights, c, n, k } = product;
  for (const row of rows) {
    for (let column = 0; column < n; column++) {
      const expected = documentedEntry(
        a.subarray(row * k, (row + 1) * k),
        weights.subarray(column * k, (column + 1) * k),
        width,
      );
      assert.equal(c[row * n + column], expected, `${label}, entry (${row}, ${column})`);
    }
  }
}

describe('native bfloat16 product: the documented summation order', { skip: !native }, () => {
  test('every entry, few rows and many, equals the order written out', () => {
    const random = createRandom(11);
    // n = 70: column blocks of 64 and 6; 150 rows are cut between tasks as well.
    for (const [m, n, k] of [
      [1, 70, 3 * width + 5],
      [5, 9, 2 * width],
      [150, 70, 4 * width + 3],
    ] as const) {
      const a = coarseValues(random, m * k, 12);
      const bits = roundToBfloat16(coarseValues(random, n * k, 8));
      const weights = widenBfloat16(bits);
      const c = new Float32Array(m * n);
      native!.matmulBfloat16({ a, b: bits, c, m, n, k, transposeB: true });
      const rows = Array.from({ length: m }, (_value, row) => row);
      assertRowsInDocumentedOrder({ a, weights, c, n, k }, rows, `m ${m}`);
    }
  });

  test('many rows past L2: sampled rows, every column, equal the order written out', () => {
    // A of 700 × 600 floats is past the L2 of the hosts this runs on and its micro-panel fits
    // L1, so the lane tile runs by chunks of B (matmul_bfloat16_lanes.c): 500 columns read A in
    // place, 1,100 pack it; both leave partial last chunks, panels and micro-panels, and
    // k = 600 a tail past the last whole vector.
    const random = createRandom(13);
    const [m, k] = [700, 600];
    for (const n of [500, 1100]) {
      const a = coarseValues(random, m * k, 12);
      const bits = roundToBfloat16(coarseValues(random, n * k, 8));
      const weights = widenBfloat16(bits);
      const c = new Float32Array(m * n);
      native!.matmulBfloat16({ a, b: bits, c, m, n, k, transposeB: true });
      const rows = [...Array.from({ length: Math.ceil(m / 37) }, (_value, i) => i * 37), m - 1];
      assertRowsInDocumentedOrder({ a, weights, c, n, k }, rows, `n ${n}`);
    }
  });

  test('the order is seen: summing the lanes one after another gives other bits', () => {
    const random = createRandom(12);
    const k = 8 * width;
    const a = coarseValues(random, k, 12);
    const weights = widenBfloat16(roundToBfloat16(coarseValues(random, k, 8)));
    let differs = false;
    for (let shift = 0; shift < 20 && !differs; shift++) {
      const lanes = new Array<number>(width).fill(0);
      for (let p = 0; p < k; p++)
        lanes[p % width] = fround(lanes[p % width]! + a[(p + shift) % k]! * weights[p]!);
      const sequential = lanes.reduce((total, lane) => fround(total + lane), 0);
      differs = sequential !== treeSum(lanes);
    }
    assert.ok(differs, 'the emulation would not tell the tree from a sequential sum');
  });
});

/**
 * One entry of C = A·Bᵀ (+ C) in the GEMM kernels' order (native/src/gemm.h): one FMA chain per
 * 256-deep slice of k, from zero, p in order; the slices added in order, to C's old value first
 * when accumulating.
 */
function gemmOrderEntry(a: Float32Array, b: Float32Array, old: number | null): number {
  let total = old;
  for (let p0 = 0; p0 < a.length; p0 += 256) {
    let chain = 0;
    for (let p = p0; p < Math.min(p0 + 256, a.length); p++) chain = fround(chain + a[p]! * b[p]!);
    total = total === null ? chain : fround(chain + total);
  }
  return total ?? 0;
}

/** Asserts every column of `rows` of C [m×n] (+)= A·Bᵀ equals the GEMM order's sum. */
function assertRowsInGemmOrder(
  product: {
    rowOf: (row: number) => Float32Array;
    b: Float32Array;
    c: Float32Array;
    old: Float32Array | null;
    n: number;
    k: number;
  },
  rows: Iterable<number>,
  label: string,
): void {
  const { rowOf, b, c, old, n, k } = product;
  for (const row of rows) {
    const aRow = rowOf(row);
    for (let column = 0; column < n; column++) {
      const entry = gemmOrderEntry(
        aRow,
        b.subarray(column * k, (column + 1) * k),
        old ? old[row * n + column]! : null,
      );
      assert.equal(c[row * n + column], entry, `${label}, entry (${row}, ${column})`);
    }
  }
}

describe('native float32 products: the GEMM order', { skip: !native }, () => {
  // Row counts of the weight-rows kernel (24–128: row blocks of one to four vectors, a partial
  // last vector) and past it (the column panels); n = 70 leaves a last group of 6 columns,
  // k = 530 three slices, the last 18 deep.
  const shapes = [24, 40, 64, 100, 128, 150].map((m) => [m, 70, 530] as const);

  test('matmulGemmOrder: every entry equals the order written out', () => {
    const random = createRandom(21);
    for (const [m, n, k] of shapes) {
      const a = coarseValues(random, m * k, 12);
      const b = coarseValues(random, n * k, 8);
      const c = new Float32Array(m * n).fill(Number.NaN);
      native!.matmulGemmOrder({ a, b, c, m, n, k, transposeB: true });
      const rowOf = (row: number) => a.subarray(row * k, (row + 1) * k);
      const rows = Array.from({ length: m }, (_value, row) => row);
      assertRowsInGemmOrder({ rowOf, b, c, old: null, n, k }, rows, `m ${m}`);
    }
  });

  test(
    'matmul on our kernels, overwriting C and adding to it: the same order',
    {
      skip: nativeBuildInfo()?.sgemm !== 'own' && 'large products run on OpenBLAS here',
    },
    () => {
      const random = createRandom(22);
      for (const [m, n, k] of shapes)
        for (const beta of [0, 1]) {
          const a = coarseValues(random, m * k, 12);
          const b = coarseValues(random, n * k, 8);
          const old = coarseValues(random, m * n, 12);
          const c = old.slice();
          native!.matmul({
            a,
            b,
            c,
            batch: 1,
            m,
            n,
            k,
            transposeA: false,
            transposeB: true,
            strideA: 0,
            strideB: 0,
            alpha: 1,
            beta,
          });
          const rowOf = (row: number) => a.subarray(row * k, (row + 1) * k);
          const rows = Array.from({ length: m }, (_value, row) => row);
          const before = beta ? old : null;
          assertRowsInGemmOrder({ rowOf, b, c, old: before, n, k }, rows, `m ${m}, beta ${beta}`);
        }
    },
  );
});

describe(
  'native float32 products: the packed kernel sums in the GEMM order',
  { skip: !native },
  () => {
    // Shapes only the packed kernel takes on AVX-512 hosts: k past the panels' depth with more
    // rows and columns than they keep (B in two column chunks of the task split, rows in blocks
    // by the thread count), and A transposed past its shorter depth. k = 1,030 and 600 leave a
    // short last slice; 1,100 and 200 columns a partial last panel.
    const cases = [
      { m: 400, n: 1100, k: 1030, transposeA: false },
      { m: 301, n: 200, k: 600, transposeA: true },
    ];
    const ownKernels = nativeBuildInfo()?.sgemm === 'own' && width === 16;

    test(
      'sampled rows, every column, overwriting C and adding to it',
      { skip: !ownKernels && 'large products run elsewhere than the packed kernel here' },
      () => {
        const random = createRandom(23);
        for (const { m, n, k, transposeA } of cases)
          for (const beta of [0, 1]) {
            const a = coarseValues(random, m * k, 12);
            const b = coarseValues(random, n * k, 8);
            const old = coarseValues(random, m * n, 12);
            const c = old.slice();
            nativeKernelPaths({ reset: true });
            native!.matmul({
              a,
              b,
              c,
              batch: 1,
              m,
              n,
              k,
              transposeA,
              transposeB: true,
              strideA: 0,
              strideB: 0,
              alpha: 1,
              beta,
            });
            const paths = nativeKernelPaths()!.map((path) => path.path);
            assert.deepEqual(paths, ['packed (matmul, matmulGemmOrder)'], `m ${m}: the path`);
            const rowOf = (row: number) =>
              transposeA
                ? Float32Array.from({ length: k }, (_value, p) => a[p * m + row]!)
                : a.subarray(row * k, (row + 1) * k);
            const rows = [
              ...Array.from({ length: Math.ceil(m / 37) }, (_value, i) => i * 37),
              m - 1,
            ];
            const before = beta ? old : null;
            assertRowsInGemmOrder({ rowOf, b, c, old: before, n, k }, rows, `m ${m}, beta ${beta}`);
          }
      },
    );
  },
);
