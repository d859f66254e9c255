import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadNativeBackend, nativeReadMemory } from '../backend/native.js';
import { measureMemoryRead, probeBytes } from './memory-bound.js';

const native = loadNativeBackend() !== null;

describe('the memory read probe', { skip: !native && 'native addon not built' }, () => {
  it('reads every float once, the last partial chunk and vector included', () => {
    const length = 3 * 2 ** 20 + 37;
    const data = new Float32Array(length).fill(1);
    data[length - 1] = 1000;
    data[2 ** 20] = -5;
    assert.equal(nativeReadMemory(data), length - 2 + 1000 - 5);
    assert.equal(nativeReadMemory(new Float32Array(0)), 0);
  });

  it('gives a rate in GB/s', () => {
    const read = measureMemoryRead({ bytes: 16 * 2 ** 20, minimumSeconds: 0.01 });
    assert.ok(read !== null && Number.isFinite(read.gigabytesPerSecond), JSON.stringify(read));
    assert.ok(read.gigabytesPerSecond > 0);
    assert.equal(read.bytes, 16 * 2 ** 20);
  });
});

describe("the probe's size", () => {
  it('is four times the last-level cache in whole GiB, from 1 to 4 GiB', () => {
    const mebibyte = 2 ** 20;
    assert.equal(probeBytes(0), 2 ** 30);
    assert.equal(probeBytes(32 * mebibyte), 2 ** 30);
    assert.equal(probeBytes(260 * mebibyte), 2 * 2 ** 30);
    assert.equal(probeBytes(512 * mebibyte), 2 * 2 ** 30);
    assert.equal(probeBytes(4096 * mebibyte), 4 * 2 ** 30);
  });
});
