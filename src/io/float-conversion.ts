import { TeamtrError } from '../util/errors.js';
import type { ReadableDtype } from './safetensors-header.js';

/**
 * Little-endian bytes of F32 / F16 / BF16 / F64 arrays → float32. Conversions work on bit
 * patterns (Uint32Array views), so NaN payloads, infinities, signed zeros and subnormals come
 * through exactly; F64 → F32 rounds to nearest, ties to even.
 *
 * Typed-array views read in host byte order, so the fast paths below are only valid on a
 * little-endian host (every platform Node ships for but s390x); `assertLittleEndianHost`
 * refuses the others rather than silently scrambling weights.
 */

export const hostIsLittleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function assertLittleEndianHost(): void {
  if (!hostIsLittleEndian) {
    throw new TeamtrError(
      'safetensors stores little-endian data and this host is big-endian, which teamtr does not support',
    );
  }
}

/** float16 bit pattern → float32 bit pattern, for all 65536 inputs (256 KiB, built on first use). */
let halfToSingleBits: Uint32Array | null = null;

function halfTable(): Uint32Array {
  if (halfToSingleBits) return halfToSingleBits;
  const table = new Uint32Array(65536);
  const scratch = new Float32Array(1);
  const scratchBits = new Uint32Array(scratch.buffer);
  for (let half = 0; half < 65536; half++) {
    const sign = (half & 0x8000) << 16;
    const exponent = (half >>> 10) & 0x1f;
    const mantissa = half & 0x3ff;
    if (exponent === 0x1f) {
      // Infinity or NaN: keep the mantissa (NaN payload and its quiet bit) in the top bits.
      table[half] = (sign | 0x7f800000 | (mantissa << 13)) >>> 0;
    } else if (exponent === 0) {
      // Zero or subnormal: mantissa × 2^-24 is exactly representable in float32.
      scratch[0] = mantissa * 2 ** -24;
      table[half] = (sign | scratchBits[0]) >>> 0;
    } else {
      table[half] = (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13)) >>> 0;
    }
  }
  halfToSingleBits = table;
  return table;
}

/**
 * Converts `bytes` (whole elements of `dtype`, little-endian) into `out` starting at element
 * `outOffset`. `bytes` may sit at any byte offset; misaligned input is copied once.
 */
export function decodeFloats(
  bytes: Uint8Array,
  dtype: ReadableDtype,
  out: Float32Array,
  outOffset: number,
): void {
  assertLittleEndianHost();
  if (dtype === 'F32') {
    new Uint8Array(out.buffer, out.byteOffset + outOffset * 4, bytes.length).set(bytes);
    return;
  }
  const elementSize = dtype === 'F64' ? 8 : 2;
  // `new Uint8Array(bytes)` copies to offset 0 (Buffer#slice would not copy).
  const aligned = bytes.byteOffset % elementSize === 0 ? bytes : new Uint8Array(bytes);
  const count = aligned.length / elementSize;
  if (dtype === 'F64') {
    const input = new Float64Array(aligned.buffer, aligned.byteOffset, count);
    out.set(input, outOffset);
    return;
  }
  const input = new Uint16Array(aligned.buffer, aligned.byteOffset, count);
  const outBits = new Uint32Array(out.buffer, out.byteOffset + outOffset * 4, count);
  if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32.
    for (let index = 0; index < count; index++) outBits[index] = input[index] << 16;
    return;
  }
  const table = halfTable();
  for (let index = 0; index < count; index++) outBits[index] = table[input[index]];
}

/** The bytes of a float32 array, little-endian, without copying. */
export function float32Bytes(data: Float32Array): Uint8Array {
  assertLittleEndianHost();
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
