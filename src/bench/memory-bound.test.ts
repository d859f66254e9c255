import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadNativeBackend, nativeReadMemory } from '../backend/native.js';
import { measureMemoryRead } from './memory-bound.js';

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
    const rate = measureMemoryRead({ megabytes: 16, minimumSeconds: 0.01 });
    assert.ok(rate !== null && Number.isFinite(rate) && rate > 0, String(rate));
  });
});
