import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeResampling } from './client/describe.js';

test('the feed says what the lazy schedule decided after an update, and why', () => {
  assert.equal(
    describeResampling({
      resampled: false,
      totalVariation: 0.0812,
      staleTerm: 0.01234,
      slack: 0.0456,
      threshold: 1,
    }),
    'kept the batch (TV 0.0812; stale 0.0123 < 1 × slack 0.0456)',
  );
  assert.equal(
    describeResampling({
      resampled: true,
      totalVariation: 0.3,
      staleTerm: 0.2,
      slack: 0,
      threshold: 'infinity',
    }),
    'resampled (TV 0.3; stale 0.2 ≥ ∞ × slack 0)',
  );
});
