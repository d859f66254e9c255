import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import {
  allocate,
  clearPool,
  memoryStatistics,
  release,
  setMaximumPooledBytes,
  tidy,
} from './memory.js';
import { loadNativeBackend, nativeAddressAlignment } from '../backend/native.js';
import { runInChild } from '../backend/testing/child-process.js';
import { add } from './ops/elementwise.js';
import { Tensor } from './tensor.js';

describe('buffer pool', () => {
  let previousBound = 0;
  afterEach(() => {
    setMaximumPooledBytes(previousBound);
    clearPool();
  });

  test('by default its bound grows to the most bytes in use at once, until cleared', () => {
    clearPool();
    const megabyte = 2 ** 20;
    previousBound = setMaximumPooledBytes(4 * megabyte, { growToWorkingSet: true });
    // Ten activations of 1.2 MB in use at once: 12 MB, three times the 4 MiB floor.
    const length = 300_000;
    const round = () => {
      const buffers = Array.from({ length: 10 }, () => allocate(length));
      for (const buffer of buffers) release(buffer);
    };
    round();
    assert.equal(memoryStatistics().poolBoundBytes, 10 * 4 * length);
    assert.equal(memoryStatistics().pooledBuffers, 10, 'the whole working set is kept');
    const freshBefore = memoryStatistics().freshBytes;
    round();
    assert.equal(memoryStatistics().freshBytes, freshBefore, 'and reused: no new buffer');
    clearPool();
    assert.equal(memoryStatistics().poolBoundBytes, 4 * megabyte, 'a cleared pool starts over');
    // A fixed bound of the same floor keeps three of them and makes the other seven anew.
    setMaximumPooledBytes(4 * megabyte);
    round();
    assert.equal(memoryStatistics().pooledBuffers, 3);
    const freshFixed = memoryStatistics().freshBytes;
    round();
    assert.equal(memoryStatistics().freshBytes - freshFixed, 7 * 2 * megabyte);
  });

  test('TEAMTR_POOL_BYTES fixes the bound; a malformed value is refused by name', () => {
    // A fresh process, as the variable is read on the pool's first use.
    const boundIn = (value: string) => {
      const script =
        "import('./src/tensor/memory.ts').then((m) => { try { const b = m.allocate(300000); " +
        'm.release(b); const s = m.memoryStatistics(); console.log(s.poolBoundBytes, s.pooledBuffers); ' +
        '} catch (error) { console.log(error.name + ": " + error.message); } })';
      return runInChild(script, { TEAMTR_POOL_BYTES: value }).stdout.trim();
    };
    // 1 MB is below the 1.2 MB the buffer used: fixed, the bound keeps it out of the pool.
    assert.equal(boundIn('1000000'), '1000000 0');
    assert.equal(boundIn(''), `${2 ** 30} 1`);
    assert.match(
      boundIn('2GiB'),
      /^ConfigError: TEAMTR_POOL_BYTES: must be a whole number of bytes/,
    );
    assert.match(boundIn('-1'), /unset it for the default/);
  });

  test('its bound counts the bytes buffers have used, not their size classes', () => {
    clearPool();
    // Ten activations of 1.2 MB, each in a 2 MiB size class: 20 MiB of classes, 12 MB used.
    previousBound = setMaximumPooledBytes(16 * 2 ** 20);
    const length = 300_000;
    const round = () => {
      const buffers = Array.from({ length: 10 }, () => allocate(length));
      for (const buffer of buffers) release(buffer);
    };
    round();
    const fresh = memoryStatistics().freshBytes;
    assert.equal(memoryStatistics().pooledBytes, 10 * 4 * length);
    round();
    assert.equal(memoryStatistics().freshBytes, fresh, 'the second round reused every buffer');
  });

  test('a buffer counts the most its views have used, and the bound still holds', () => {
    clearPool();
    previousBound = setMaximumPooledBytes(3 * 2 ** 20);
    const small = allocate(300_000); // 1.2 MB of a 2 MiB class
    release(small);
    const large = allocate(500_000); // the same buffer, now 2 MB used
    assert.equal(large.buffer, small.buffer);
    release(large);
    assert.equal(memoryStatistics().pooledBytes, 4 * 500_000);
    const other = allocate(500_000); // the pooled buffer
    release(allocate(500_000)); // a new one, pooled
    release(other); // 4 MB would pass 3 MiB: left to the GC

    assert.equal(memoryStatistics().pooledBytes, 4 * 500_000);
  });

  test('a new buffer trims the pool to leave room under its bound, or to half of it', () => {
    clearPool();
    const megabyte = 2 ** 20;
    const pooled = () => memoryStatistics().pooledBytes / megabyte;
    previousBound = setMaximumPooledBytes(16 * megabyte);
    // A phase that used twelve 1 MB buffers (12 MB pooled), then one that needs 2 MB buffers.
    const first = Array.from({ length: 12 }, () => allocate(2 ** 18));
    for (const buffer of first) release(buffer);
    assert.equal(pooled(), 12);
    // With little in use, the pool keeps what fits beside it and the new buffer.
    const second = [allocate(2 ** 19), allocate(2 ** 19)];
    assert.equal(pooled(), 12, '2 MB in use + 12 pooled + 2 new');
    second.push(allocate(2 ** 19));
    assert.equal(pooled(), 10, '4 MB in use + 10 pooled + 2 new');
    // Once more than half the bound is in use, it keeps half the bound less the new buffer.
    for (let count = 0; count < 3; count++) second.push(allocate(2 ** 19));
    assert.equal(pooled(), 6, '10 MB in use, 8 − 2 MB pooled');
    // Reused buffers trim nothing.
    const again = Array.from({ length: 6 }, () => allocate(2 ** 18));
    assert.equal(pooled(), 0);
    for (const buffer of [...second, ...again]) release(buffer);
    assert.equal(memoryStatistics().outstandingBytes, 0);
  });

  test('a negative bound is refused', () => {
    previousBound = setMaximumPooledBytes(1);
    assert.throws(() => setMaximumPooledBytes(-1), /≥ 0 bytes/);
  });

  test("takeData hands a tensor's pooled buffer out of its scope, for release to reuse", () => {
    clearPool();
    previousBound = setMaximumPooledBytes(16 * 2 ** 20);
    const input = new Tensor(
      Float32Array.from({ length: 1000 }, (_, index) => index / 1000),
      [10, 100],
    );
    const expected = add(input, 1).data.slice();
    let taken: Tensor | null = null;
    const inUse = memoryStatistics().outstandingBytes;
    const values = tidy(() => {
      taken = add(input, 1);
      return taken.takeData();
    });
    assert.deepEqual(values, expected);
    assert.equal(taken!.isDisposed, true);
    // tidy disposed the taken tensor without giving its buffer back: nothing else holds it.
    // Out of the pool's count of buffers in use until released, if ever.
    assert.equal(memoryStatistics().outstandingBytes, inUse);
    const other = allocate(1000);
    assert.notEqual(other.buffer, values.buffer);
    release(values);
    const reused = allocate(1000);
    assert.equal(reused.buffer, values.buffer, 'the released buffer is reused');
    for (const buffer of [other, reused]) release(buffer);
    assert.equal(memoryStatistics().outstandingBytes, inUse);
    assert.throws(() => input.keep().takeData(), /persistent tensor of shape \[10, 100\]/);
  });

  test(
    'with the native addon loaded, pooled buffers start on a cache line, new and reused',
    { skip: !loadNativeBackend() && 'native addon not built' },
    () => {
      clearPool();
      const lineOffset = (buffer: Float32Array) =>
        (nativeAddressAlignment(buffer.buffer as ArrayBuffer)! + buffer.byteOffset) % 64;
      const buffers = [1_000, 4_096, 300_000].map((length) => allocate(length));
      for (const buffer of buffers) assert.equal(lineOffset(buffer), 0, `${buffer.length} new`);
      for (const buffer of buffers) release(buffer);
      assert.equal(memoryStatistics().pooledBuffers, 3, 'the aligned views are pooled');
      const reused = allocate(290_000);
      assert.equal(reused.buffer, buffers[2]!.buffer, 'the same size class is reused');
      assert.equal(lineOffset(reused), 0, 'reused');
      release(reused);
    },
  );
});
