/**
 * bfloat16: the upper 16 bits of a float32 (sign, the same 8-bit exponent, 7 mantissa bits).
 * Frozen weights are kept in it (`matmulBfloat16`) to halve the bytes a decode step streams.
 * Widening is a shift and exact; narrowing rounds to nearest, ties to even, as PyTorch's
 * `tensor.to(torch.bfloat16)` does, so a checkpoint converted here matches one converted there.
 */

/** bfloat16 bit patterns → float32 values (exact, NaN payloads and signed zeros included). */
export function widenBfloat16(bits: Uint16Array): Float32Array {
  const wide = new Uint32Array(bits.length);
  for (let index = 0; index < bits.length; index++) wide[index] = bits[index]! << 16;
  return new Float32Array(wide.buffer);
}

/**
 * float32 values → bfloat16 bit patterns, rounded to nearest, ties to even (finite values past
 * the largest bfloat16 round to ±∞). NaN stays NaN: its payload's top bits are kept and the
 * quiet bit set, so a NaN whose payload sits only in the low bits does not become ±∞.
 */
export function roundToBfloat16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const result = new Uint16Array(values.length);
  for (let index = 0; index < values.length; index++) {
    const single = bits[index]!;
    if ((single & 0x7fffffff) > 0x7f800000) {
      result[index] = (single >>> 16) | 0x0040;
      continue;
    }
    result[index] = (single + 0x7fff + ((single >>> 16) & 1)) >>> 16;
  }
  return result;
}
