import { nativeHost, nativeReadMemory } from '../backend/native.js';
import { timeKernel } from './timing.js';

/**
 * The bytes the probe reads: four times the last-level cache, so that at most a quarter of it
 * can come from there (the Xeon this was written on reports 260 MiB of L3: two threads read a
 * 256 MiB probe at 30 GB/s and a 2 GiB one at 27, alternating in one process); at least 1 GiB,
 * at most 4 GiB.
 */
export function probeBytes(l3Bytes: number): number {
  const gibibyte = 2 ** 30;
  return Math.min(4 * gibibyte, Math.max(gibibyte, Math.ceil((4 * l3Bytes) / gibibyte) * gibibyte));
}

/**
 * The machine's memory read rate, measured in the same run as the sgemm bound: the second
 * bound of `teamtr bench`. Decode-side work reads every weight once per step, and attention a
 * whole key/value cache, so it runs at most at bytes ÷ this rate however fast the arithmetic:
 * a product with 16 rows does 32 FLOPs per bfloat16 weight (2 bytes), so at 25 GB/s it cannot
 * pass 400 GFLOP/s. One pass over an array well past the caches (`probeBytes`), on the kernel
 * threads, the median of the timed passes. Null without the native addon.
 */
export function measureMemoryRead(
  options: { bytes?: number; minimumSeconds?: number } = {},
): { gigabytesPerSecond: number; bytes: number } | null {
  const host = nativeHost();
  if (!host) return null;
  const { bytes = probeBytes(host.l3Bytes), minimumSeconds = 1 } = options;
  const data = new Float32Array(Math.floor(bytes / 4)).fill(1);
  const timing = timeKernel(() => void nativeReadMemory(data), { minimumSeconds, minimumRuns: 3 });
  return {
    gigabytesPerSecond: data.byteLength / timing.medianSeconds / 1e9,
    bytes: data.byteLength,
  };
}
