/**
 * The products native-tile-order.test.ts checks against the AMX tiles' order written out: every
 * shape the tile path takes (n a multiple of 16, k of 32) at row counts of decoding, of a few
 * row blocks (five rows a block, four blocks a step) and many, in slabs, with alpha and beta, and with A so small that parts
 * of its values and of their products fall below float32's normal range (where the tiles read
 * and write zero). Run in this process, or in a child with TEAMTR_AMX set (`main` below prints
 * the results as JSON), from the same seeds.
 */
import { roundToBfloat16 } from '../bfloat16.js';
import { loadNativeBackend, nativeKernelPaths } from '../native.js';
import { createRandom, randomArray } from './random.js';

export interface TileOrderCase {
  m: number;
  n: number;
  k: number;
  /** B [n×k] (y = x·Wᵀ) or B [k×n] (dInput = dOutput·W). */
  transposeB: boolean;
  alpha: number;
  beta: number;
  /** A's values scaled by 2^scale (−118: parts and sums below 2⁻¹²⁶). */
  scale: number;
}

const shapes = [
  [16, 32],
  [48, 96],
  [80, 576],
] as const;

export const tileOrderCases: readonly TileOrderCase[] = [true, false].flatMap((transposeB) => [
  ...[1, 3, 5, 6, 11, 150].flatMap((m) =>
    shapes.map(([n, k]) => ({ m, n, k, transposeB, alpha: 1, beta: 0, scale: 0 })),
  ),
  { m: 7, n: 48, k: 64, transposeB, alpha: 0.5, beta: 1, scale: 0 },
  { m: 12, n: 32, k: 96, transposeB, alpha: 2, beta: -0.5, scale: 0 },
  { m: 9, n: 64, k: 128, transposeB, alpha: 1, beta: 0, scale: -118 },
  // k = 8,960 (Qwen2.5-1.5B's MLP): 150 rows run as slabs of 140 and 10, as packed A is bounded.
  { m: 150, n: 16, k: 8960, transposeB, alpha: 1, beta: 0, scale: 0 },
]);

export interface TileOrderInputs {
  a: Float32Array;
  b: Uint16Array;
  start: Float32Array;
}

/** The case's A, bfloat16 B and starting C, from its index as the seed. */
export function tileOrderInputs(index: number): TileOrderInputs {
  const { m, n, k, scale } = tileOrderCases[index]!;
  const random = createRandom(900 + index);
  return {
    a: randomArray(random, m * k, 2 ** scale),
    b: roundToBfloat16(randomArray(random, n * k)),
    start: randomArray(random, m * n),
  };
}

/** Every case's C from the native product in this process, and the kernel paths it took. */
export function nativeTileOrderResults(): { results: number[][]; paths: string[] } {
  const native = loadNativeBackend();
  if (!native) throw new Error('the native addon is not built');
  nativeKernelPaths({ reset: true });
  const results = tileOrderCases.map(({ m, n, k, transposeB, alpha, beta }, index) => {
    const { a, b, start } = tileOrderInputs(index);
    const c = start.slice();
    native.matmulBfloat16({ a, b, c, m, n, k, transposeB, alpha, beta });
    return Array.from(c);
  });
  const paths = (nativeKernelPaths() ?? []).map((path) => path.path);
  return { results, paths };
}
