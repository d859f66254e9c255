import { nativeReadMemory } from '../backend/native.js';
import { timeKernel } from './timing.js';

/**
 * The machine's memory read rate, measured in the same run as the sgemm bound: the second
 * bound of `teamtr bench`. Decode-side work reads every weight once per step, and attention a
 * whole key/value cache, so it runs at most at bytes ÷ this rate however fast the arithmetic:
 * a product with 16 rows does 32 FLOPs per bfloat16 weight, so at 12 GB/s it cannot pass
 * 192 GFLOP/s. One pass over an array far past the caches, on the kernel threads, the median
 * of the timed passes. Null without the native addon.
 */
export function measureMemoryRead(
  options: { megabytes?: number; minimumSeconds?: number } = {},
): number | null {
  const { megabytes = 256, minimumSeconds = 1 } = options;
  const data = new Float32Array((megabytes * 2 ** 20) / 4).fill(1);
  if (nativeReadMemory(data) === null) return null;
  const timing = timeKernel(() => void nativeReadMemory(data), { minimumSeconds, minimumRuns: 3 });
  return data.byteLength / timing.medianSeconds / 1e9;
}
