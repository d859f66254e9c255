import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { FileFormatError, ShapeError, TeamtrError } from '../util/errors.js';
import {
  decodeSafetensors,
  encodeSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  writeSafetensors,
} from './safetensors.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-safetensors-'));
after(() => rmSync(directory, { recursive: true, force: true }));

/** A file with the given header (object or raw text), `dataLength` data bytes and an optional lying prefix. */
function craft(header: unknown, dataLength: number, claimedHeaderLength?: bigint): Buffer {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(claimedHeaderLength ?? BigInt(json.length));
  return Buffer.concat([prefix, json, Buffer.alloc(dataLength, 7)]);
}

const f32 = (shape: number[], begin: number, end: number) => ({
  dtype: 'F32',
  shape,
  data_offsets: [begin, end],
});

let fileCounter = 0;
function writeTemp(bytes: Uint8Array): string {
  const file = path.join(directory, `case-${fileCounter++}.safetensors`);
  writeFileSync(file, bytes);
  return file;
}

/** Each kind of damage must give a FileFormatError naming the file and the problem, from memory and from disk. */
const damaged: Array<{ what: string; bytes: Buffer; message: RegExp }> = [
  {
    what: 'shorter than 8 bytes',
    bytes: Buffer.from([1, 0, 0]),
    message: /3 bytes, shorter than the 8-byte/,
  },
  { what: 'empty file', bytes: Buffer.alloc(0), message: /0 bytes, shorter than the 8-byte/ },
  {
    what: 'header length beyond the file',
    bytes: craft({ a: f32([1], 0, 4) }, 4, 1000n),
    message:
      /header length claims 1000 bytes but only \d+ bytes follow the prefix; the file is truncated/,
  },
  {
    what: 'absurd header length 2^60',
    bytes: craft('{}', 0, 2n ** 60n),
    message: /claims 1152921504606846976 bytes, above the 100000000-byte limit/,
  },
  {
    what: 'invalid JSON',
    bytes: craft('{"a": {"dtype": "F32",', 0),
    message: /header is not valid JSON/,
  },
  {
    what: 'header not an object',
    bytes: craft('[1, 2]', 0),
    message: /header is not a JSON object/,
  },
  {
    what: 'unknown dtype',
    bytes: craft({ a: { dtype: 'F17', shape: [1], data_offsets: [0, 4] } }, 4),
    message: /tensor "a": unknown dtype "F17" \(known: BOOL, .*F32.*\)/,
  },
  {
    what: 'negative shape',
    bytes: craft({ a: f32([-1, 2], 0, 8) }, 8),
    message: /tensor "a": shape \[-1,2\] is not an array of non-negative integers/,
  },
  {
    what: 'fractional shape',
    bytes: craft({ a: f32([1.5], 0, 6) }, 6),
    message: /tensor "a": shape \[1.5\] is not an array of non-negative integers/,
  },
  {
    what: 'shape not an array',
    bytes: craft({ a: { dtype: 'F32', shape: 4, data_offsets: [0, 16] } }, 16),
    message: /shape 4 is not an array/,
  },
  {
    what: 'overlapping offsets',
    bytes: craft({ a: f32([2], 0, 8), b: f32([2], 4, 12) }, 12),
    message: /tensor "b" data_offsets \[4, 12\] overlap tensor "a"/,
  },
  {
    what: 'offsets out of bounds',
    bytes: craft({ a: f32([2], 0, 8) }, 4),
    message: /tensor "a": data_offsets \[0, 8\] run past the end of the data region \(4 bytes\)/,
  },
  {
    what: 'huge claimed tensor (never allocated)',
    bytes: craft({ a: f32([2 ** 20, 2 ** 20], 0, 2 ** 42) }, 16),
    message: /run past the end of the data region \(16 bytes\)/,
  },
  {
    what: 'begin after end',
    bytes: craft({ a: f32([0], 8, 4) }, 8),
    message: /data_offsets \[8, 4\] has begin after end/,
  },
  {
    what: 'offsets not a pair',
    bytes: craft({ a: { dtype: 'F32', shape: [1], data_offsets: [0] } }, 4),
    message: /data_offsets \[0\] is not a pair/,
  },
  {
    what: 'dtype × shape ≠ offsets',
    bytes: craft({ a: f32([3], 0, 8) }, 8),
    message: /dtype F32 with shape \[3\] needs 12 bytes but data_offsets \[0, 8\] span 8/,
  },
  {
    what: 'shape product overflows',
    bytes: craft({ a: f32([2 ** 30, 2 ** 30, 2 ** 30], 0, 8) }, 8),
    message: /needs more bytes than can be addressed/,
  },
  {
    what: 'gap in the data',
    bytes: craft({ a: f32([1], 0, 4), b: f32([1], 8, 12) }, 12),
    message: /data bytes \[4, 8\) belong to no tensor/,
  },
  {
    what: 'trailing unindexed bytes',
    bytes: craft({ a: f32([1], 0, 4) }, 8),
    message: /data region has 8 bytes but the tensors cover only the first 4/,
  },
  {
    what: 'non-string metadata',
    bytes: craft({ __metadata__: { step: 3 } }, 0),
    message: /__metadata__ "step" is 3; metadata values must be strings/,
  },
  {
    what: 'unknown entry field',
    bytes: craft({ a: { ...f32([1], 0, 4), extra: 1 } }, 4),
    message: /tensor "a": unknown field "extra" \(valid fields: dtype, shape, data_offsets\)/,
  },
  {
    what: 'missing entry field',
    bytes: craft({ a: { dtype: 'F32', shape: [1] } }, 4),
    message: /tensor "a": missing field "data_offsets"/,
  },
  { what: 'entry not an object', bytes: craft({ a: 5 }, 0), message: /tensor "a": entry is 5/ },
];

describe('safetensors validation', () => {
  for (const { what, bytes, message } of damaged) {
    test(`${what}: clear FileFormatError, in memory and on disk`, async () => {
      assert.throws(
        () => decodeSafetensors(bytes, { source: 'memory.safetensors' }),
        (error: unknown) =>
          error instanceof FileFormatError &&
          error.file === 'memory.safetensors' &&
          message.test(error.message),
      );
      const file = writeTemp(bytes);
      await assert.rejects(
        readSafetensors(file),
        (error: unknown) =>
          error instanceof FileFormatError &&
          error.message.startsWith(file) &&
          message.test(error.message),
      );
    });
  }

  test('a header nested 200,000 levels deep is a clear error, not a stack overflow', () => {
    const depth = 200_000;
    const json = Buffer.from(`{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(json.length));
    assert.throws(
      () => decodeSafetensors(Buffer.concat([prefix, json]), { source: 'deep.safetensors' }),
      (error: unknown) =>
        error instanceof FileFormatError &&
        /deep\.safetensors: .*deeply nested array/.test(error.message),
    );
  });

  test('invalid UTF-8 in the header is named as such', () => {
    const json = Buffer.concat([Buffer.from('{"'), Buffer.from([0xff]), Buffer.from('":{}}')]);
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(json.length));
    assert.throws(
      () => decodeSafetensors(Buffer.concat([prefix, json])),
      /header is not valid UTF-8/,
    );
  });

  test('a file truncated inside the data reports the tensor that runs past the end', async () => {
    const whole = encodeSafetensors([
      { name: 'a', shape: [4], data: new Float32Array([1, 2, 3, 4]) },
      { name: 'b', shape: [2], data: new Float32Array([5, 6]) },
    ]);
    const file = writeTemp(whole.subarray(0, whole.length - 3));
    await assert.rejects(
      readSafetensors(file),
      /tensor "b": data_offsets \[16, 24\] run past the end of the data region \(21 bytes\)/,
    );
  });

  test('a missing file is a FileFormatError, not a raw ENOENT', async () => {
    await assert.rejects(
      readSafetensors(path.join(directory, 'absent.safetensors')),
      (error: unknown) => {
        return (
          error instanceof FileFormatError &&
          /absent\.safetensors: file not found/.test(error.message)
        );
      },
    );
  });

  test('a known but unsupported dtype is refused only when read, naming the supported ones', async () => {
    const header = {
      ids: { dtype: 'I64', shape: [2], data_offsets: [0, 16] },
      w: f32([1], 16, 20),
    };
    const file = writeTemp(craft(header, 20));
    const parsed = await readSafetensorsHeader(file);
    assert.deepEqual(parsed.tensors.get('ids'), { dtype: 'I64', shape: [2], begin: 0, end: 16 });
    await assert.rejects(
      readSafetensors(file),
      /tensor "ids" has unsupported dtype I64 \(supported: F32, F16, BF16, F64\)/,
    );
    const onlyWeights = await readSafetensors(file, { names: ['w'] });
    assert.deepEqual([...onlyWeights.tensors.keys()], ['w']);
  });
});

describe('safetensors round trip and layout', () => {
  const specials = new Float32Array([NaN, Infinity, -Infinity, -0, 1e-45, 3.4028234663852886e38]);
  const tensors = [
    { name: 'layer.weight', shape: [2, 3], data: new Float32Array([1, -2, 3.5, 0.1, 1e-8, -7]) },
    { name: 'bias', shape: [6], data: specials },
    { name: 'empty', shape: [0, 4], data: new Float32Array(0) },
    { name: 'scalar', shape: [], data: new Float32Array([42]) },
  ];

  test('write then read returns identical bits, shapes, dtype and metadata', async () => {
    const file = path.join(directory, 'roundtrip.safetensors');
    await writeSafetensors(file, tensors, { format: 'pt', note: 'ünïcode' });
    const read = await readSafetensors(file);
    assert.deepEqual(read.metadata, { format: 'pt', note: 'ünïcode' });
    assert.deepEqual([...read.tensors.keys()], ['bias', 'empty', 'layer.weight', 'scalar']);
    for (const tensor of tensors) {
      const loaded = read.tensors.get(tensor.name)!;
      assert.equal(loaded.dtype, 'F32');
      assert.deepEqual(loaded.shape, tensor.shape);
      assert.deepEqual(
        new Uint32Array(loaded.data.buffer),
        new Uint32Array(tensor.data.slice().buffer),
      );
    }
    assert.deepEqual(decodeSafetensors(readFileSync(file)).tensors, read.tensors);
  });

  test('layout follows the spec: u64 LE length, space-padded header, sorted contiguous offsets', () => {
    const bytes = encodeSafetensors(tensors, { format: 'pt' });
    const headerLength = Number(bytes.readBigUInt64LE(0));
    assert.equal((8 + headerLength) % 8, 0);
    const headerText = bytes.subarray(8, 8 + headerLength).toString('utf8');
    assert.equal(headerText[0], '{');
    assert.match(headerText, /} *$/);
    assert.equal(headerText.trimEnd().length >= headerLength - 7, true);
    const header = JSON.parse(headerText);
    assert.deepEqual(header.__metadata__, { format: 'pt' });
    assert.deepEqual(header.bias, { dtype: 'F32', shape: [6], data_offsets: [0, 24] });
    assert.deepEqual(header.empty, { dtype: 'F32', shape: [0, 4], data_offsets: [24, 24] });
    assert.deepEqual(header['layer.weight'], {
      dtype: 'F32',
      shape: [2, 3],
      data_offsets: [24, 48],
    });
    assert.deepEqual(header.scalar, { dtype: 'F32', shape: [], data_offsets: [48, 52] });
    assert.equal(bytes.length, 8 + headerLength + 52);
    // 1.0 at the start of layer.weight, little-endian.
    assert.deepEqual(
      [...bytes.subarray(8 + headerLength + 24, 8 + headerLength + 28)],
      [0, 0, 0x80, 0x3f],
    );
  });

  test('names selects tensors; an unknown name lists the available ones', async () => {
    const file = path.join(directory, 'select.safetensors');
    await writeSafetensors(file, tensors);
    const read = await readSafetensors(file, { names: ['scalar'] });
    assert.deepEqual([...read.tensors.keys()], ['scalar']);
    await assert.rejects(
      readSafetensors(file, { names: ['nope'] }),
      /no tensor named "nope" \(available: "bias", "empty", "layer.weight", "scalar"\)/,
    );
  });

  test('the header alone can be read', async () => {
    const file = path.join(directory, 'header.safetensors');
    await writeSafetensors(file, tensors, { a: 'b' });
    const header = await readSafetensorsHeader(file);
    assert.deepEqual(header.metadata, { a: 'b' });
    assert.deepEqual(header.tensors.get('layer.weight'), {
      dtype: 'F32',
      shape: [2, 3],
      begin: 24,
      end: 48,
    });
    assert.equal(header.dataByteLength, 52);
  });

  test('writing refuses mismatched shapes, duplicates and reserved names', async () => {
    const data = new Float32Array(6);
    assert.throws(() => encodeSafetensors([{ name: 'a', shape: [5], data }]), ShapeError);
    assert.throws(
      () => encodeSafetensors([{ name: 'a', shape: [-2, -3], data }]),
      /shape \[-2, -3\] does not match its 6 elements/,
    );
    assert.throws(
      () =>
        encodeSafetensors([
          { name: 'a', shape: [6], data },
          { name: 'a', shape: [6], data },
        ]),
      /duplicate tensor name "a"/,
    );
    assert.throws(
      () => encodeSafetensors([{ name: '__metadata__', shape: [6], data }]),
      TeamtrError,
    );
    await assert.rejects(
      writeSafetensors(path.join(directory, 'bad.safetensors'), [{ name: 'a', shape: [1], data }]),
      ShapeError,
    );
  });

  test('tensors that are views into a larger buffer are written from their own bytes', () => {
    const backing = new Float32Array([9, 9, 1, 2, 3, 9]);
    const view = backing.subarray(2, 5);
    const decoded = decodeSafetensors(encodeSafetensors([{ name: 'v', shape: [3], data: view }]));
    assert.deepEqual([...decoded.tensors.get('v')!.data], [1, 2, 3]);
  });
});
