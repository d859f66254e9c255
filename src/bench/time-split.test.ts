import assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitDifference, type SplitPart, type TimeSplit } from './time-split.js';

function split(wallSeconds: number, parts: SplitPart[], faults: number): TimeSplit {
  return {
    wallSeconds,
    parts,
    zeroFilledBytes: 0,
    freshBytes: 1000 * faults,
    minorPageFaults: faults,
    majorPageFaults: 0,
    systemSeconds: faults / 1000,
  };
}

const part = (name: string, seconds: number, calls: number, multiplyAdds = 0): SplitPart => ({
  part: name,
  seconds,
  calls,
  multiplyAdds,
});

test('splitDifference: what the longer run spent beyond the shorter one, part by part', () => {
  const prefill = split(2, [part('matmul', 1.5, 10, 100), part('attention', 0.25, 2)], 40);
  const whole = split(
    5,
    [
      part('matmul', 3.5, 30, 250),
      part('sampleRows', 0.5, 3),
      part('attention', 0.25, 2),
      part('zero-filling', 0, 0),
    ],
    100,
  );
  const decode = splitDifference(whole, prefill);
  assert.equal(decode.wallSeconds, 3);
  assert.deepEqual(decode.parts, [
    part('matmul', 2, 20, 150),
    part('sampleRows', 0.5, 3),
    part('zero-filling', 0, 0),
  ]);
  assert.equal(decode.minorPageFaults, 60);
  assert.equal(decode.freshBytes, 60_000);
  assert.ok(Math.abs(decode.systemSeconds - 0.06) < 1e-12);
});

test('splitDifference: a part timed faster in the longer run reads zero, not less', () => {
  const shorter = split(1, [part('rope', 0.3, 4)], 0);
  const longer = split(1.5, [part('rope', 0.25, 8)], 0);
  assert.deepEqual(splitDifference(longer, shorter).parts, [part('rope', 0, 4)]);
});
