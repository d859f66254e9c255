import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeEvent, encodeEvent, eventFileVersion } from './tensorboard-events.js';
import { crc32c, decodeRecords, encodeRecord, maskedCrc32c } from './tfrecord.js';

test('CRC-32C matches its published check values, and the mask is TensorFlow’s', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  const ascending = Uint8Array.from({ length: 32 }, (_unused, index) => index);
  assert.equal(crc32c(ascending), 0x46dd794e);
  // mask(crc) = ((crc >>> 15) | (crc << 17)) + 0xa282ead8, computed here by hand for 0xe3069283.
  const crc = 0xe3069283;
  const rotated = Number((BigInt(crc) >> 15n) | ((BigInt(crc) << 17n) & 0xffffffffn));
  assert.equal(
    maskedCrc32c(new TextEncoder().encode('123456789')),
    (rotated + 0xa282ead8) % 2 ** 32,
  );
});

test('records frame their data with both masked CRCs and decode back; damage is caught', () => {
  const data = [
    new Uint8Array([1, 2, 3]),
    new Uint8Array(0),
    new TextEncoder().encode('x'.repeat(300)),
  ];
  const framed = Buffer.concat(data.map(encodeRecord));
  const first = encodeRecord(data[0]!);
  const view = new DataView(first.buffer);
  assert.equal(view.getBigUint64(0, true), 3n);
  assert.equal(view.getUint32(8, true), maskedCrc32c(first.subarray(0, 8)));
  assert.equal(view.getUint32(15, true), maskedCrc32c(data[0]!));
  assert.deepEqual(
    decodeRecords(framed).map((record) => Array.from(record)),
    data.map((record) => Array.from(record)),
  );
  // A record cut short at the end (a writer that stopped mid-write) is not returned.
  assert.equal(decodeRecords(framed.subarray(0, framed.length - 5)).length, 2);
  const damaged = Buffer.from(framed);
  damaged[13] = damaged[13]! ^ 1;
  assert.throws(() => decodeRecords(damaged), /data's CRC does not match/);
  const damagedLength = Buffer.from(framed);
  damagedLength[0] = 9;
  assert.throws(() => decodeRecords(damagedLength), /length's CRC does not match/);
});

test('events encode as protobuf and decode back: version, scalars and text', () => {
  const events = [
    { wallTime: 1700000000.25, step: 0, fileVersion: eventFileVersion },
    {
      wallTime: 1700000001.5,
      step: 12,
      values: [
        { tag: 'eval/accuracy', scalar: 0.375 },
        { tag: 'transcripts', text: 'solver: 5 — “ünïcode”' },
      ],
    },
  ];
  for (const event of events) assert.deepEqual(decodeEvent(encodeEvent(event)), event);
  // Field 1 (wall_time) is a double: tag 0x09 and 8 bytes; field 2 (step) a varint: tag 0x10.
  const bytes = encodeEvent({ wallTime: 1, step: 300 });
  assert.deepEqual(Array.from(bytes), [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0xac, 0x02]);
});
