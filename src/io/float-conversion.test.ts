import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { decodeFloats } from './float-conversion.js';
import { decodeSafetensors, readSafetensors } from './safetensors.js';

function bitsOf(values: Float32Array): number[] {
  return [...new Uint32Array(values.buffer, values.byteOffset, values.length)];
}

function decode16(dtype: 'F16' | 'BF16', patterns: number[]): Float32Array {
  const out = new Float32Array(patterns.length);
  decodeFloats(new Uint8Array(Uint16Array.from(patterns).buffer), dtype, out, 0);
  return out;
}

/** float16 value by its textbook definition, independent of the bit-twiddling under test. */
function halfByDefinition(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

describe('float16 → float32', () => {
  test('hand-computed bit patterns', () => {
    const cases: Array<[number, number]> = [
      [0x3c00, 1], // exponent 15 = bias, fraction 0
      [0xc000, -2],
      [0x3555, 0.333251953125], // 1.0101010101b × 2^-2 = 1365/4096
      [0x7bff, 65504], // largest finite: (2 − 2^-10) × 2^15
      [0x0400, 2 ** -14], // smallest normal
      [0x03ff, 1023 * 2 ** -24], // largest subnormal
      [0x0001, 2 ** -24], // smallest subnormal
      [0x8001, -(2 ** -24)],
      [0x7c00, Infinity],
      [0xfc00, -Infinity],
    ];
    const decoded = decode16(
      'F16',
      cases.map(([bits]) => bits),
    );
    cases.forEach(([bits, value], index) =>
      assert.equal(decoded[index], value, `0x${bits.toString(16)}`),
    );
  });

  test('signed zeros and NaN payloads keep their bits', () => {
    const decoded = decode16('F16', [0x0000, 0x8000, 0x7e00, 0xfe00, 0x7c01]);
    // NaN: exponent all ones, the 10 fraction bits moved to the top of float32's 23.
    assert.deepEqual(bitsOf(decoded), [0x00000000, 0x80000000, 0x7fc00000, 0xffc00000, 0x7f802000]);
  });

  test('all 65536 patterns agree with the textbook definition', () => {
    const patterns = Array.from({ length: 65536 }, (_, bits) => bits);
    const decoded = decode16('F16', patterns);
    for (const bits of patterns) {
      const expected = halfByDefinition(bits);
      if (Number.isNaN(expected)) assert.ok(Number.isNaN(decoded[bits]), `0x${bits.toString(16)}`);
      else
        assert.ok(
          Object.is(decoded[bits], expected),
          `0x${bits.toString(16)}: ${decoded[bits]} ≠ ${expected}`,
        );
    }
  });
});

describe('bfloat16 → float32', () => {
  test('hand-computed bit patterns', () => {
    const decoded = decode16(
      'BF16',
      [0x3f80, 0xc040, 0x3e80, 0x7f7f, 0x0080, 0x0001, 0x7f80, 0xff80, 0x8000],
    );
    const expected = [
      1,
      -3,
      0.25,
      (2 - 2 ** -7) * 2 ** 127, // largest finite bfloat16
      2 ** -126, // smallest normal
      2 ** -133, // smallest subnormal: float32 bits 0x00010000
      Infinity,
      -Infinity,
      -0,
    ];
    expected.forEach((value, index) =>
      assert.ok(Object.is(decoded[index], value), `index ${index}: ${decoded[index]}`),
    );
  });

  test('NaN keeps its bits', () => {
    assert.deepEqual(bitsOf(decode16('BF16', [0x7fc0, 0xffc1])), [0x7fc00000, 0xffc10000]);
  });
});

describe('float64 → float32', () => {
  test('rounds to nearest float32', () => {
    const input = new Float64Array([0.1, -1 / 3, 1e300, 1e-50, 16777217]);
    const out = new Float32Array(input.length);
    decodeFloats(new Uint8Array(input.buffer), 'F64', out, 0);
    assert.deepEqual([...out], [Math.fround(0.1), Math.fround(-1 / 3), Infinity, 0, 16777216]);
  });
});

describe('half-precision safetensors files', () => {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-half-'));
  after(() => rmSync(directory, { recursive: true, force: true }));

  function halfFile(
    tensors: Array<{ name: string; dtype: string; shape: number[]; bytes: Uint8Array }>,
  ): Buffer {
    const header: Record<string, unknown> = {};
    let offset = 0;
    for (const tensor of tensors) {
      header[tensor.name] = {
        dtype: tensor.dtype,
        shape: tensor.shape,
        data_offsets: [offset, offset + tensor.bytes.length],
      };
      offset += tensor.bytes.length;
    }
    const json = Buffer.from(JSON.stringify(header));
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(json.length));
    return Buffer.concat([prefix, json, ...tensors.map((tensor) => tensor.bytes)]);
  }

  test('F16 and BF16 tensors at odd file offsets decode to float32, keeping the stored dtype', async () => {
    // The header length is not padded, so the data starts at an odd offset: the reader must cope.
    const bytes = halfFile([
      {
        name: 'h',
        dtype: 'F16',
        shape: [2, 2],
        bytes: new Uint8Array(Uint16Array.from([0x3c00, 0xc000, 0x0001, 0x7c00]).buffer),
      },
      {
        name: 'b',
        dtype: 'BF16',
        shape: [3],
        bytes: new Uint8Array(Uint16Array.from([0x3f80, 0xc040, 0x3e80]).buffer),
      },
    ]);
    const file = path.join(directory, 'half.safetensors');
    writeFileSync(file, bytes);
    for (const contents of [await readSafetensors(file), decodeSafetensors(bytes)]) {
      assert.deepEqual(contents.tensors.get('h'), {
        dtype: 'F16',
        shape: [2, 2],
        data: new Float32Array([1, -2, 2 ** -24, Infinity]),
      });
      assert.deepEqual(contents.tensors.get('b'), {
        dtype: 'BF16',
        shape: [3],
        data: new Float32Array([1, -3, 0.25]),
      });
    }
  });

  test('a BF16 tensor larger than one 16 MiB read chunk decodes completely', async () => {
    // 9 Mi elements = 18 MiB: two chunks, the second partial.
    const count = 9 * 1024 * 1024;
    const patterns = new Uint16Array(count);
    for (let index = 0; index < count; index++) patterns[index] = 0x3f80 + (index % 128);
    const file = path.join(directory, 'large.safetensors');
    writeFileSync(
      file,
      halfFile([
        { name: 'w', dtype: 'BF16', shape: [count], bytes: new Uint8Array(patterns.buffer) },
      ]),
    );
    const data = (await readSafetensors(file)).tensors.get('w')!.data;
    assert.equal(data.length, count);
    const bits = new Uint32Array(data.buffer);
    for (const index of [
      0,
      1,
      127,
      128,
      8 * 1024 * 1024 - 1,
      8 * 1024 * 1024,
      8 * 1024 * 1024 + 1,
      count - 1,
    ]) {
      assert.equal(bits[index], (0x3f80 + (index % 128)) << 16, `element ${index}`);
    }
    let mismatches = 0;
    for (let index = 0; index < count; index++)
      if (bits[index] !== (0x3f80 + (index % 128)) << 16) mismatches++;
    assert.equal(mismatches, 0);
  });
});
