import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readAccuracy, readCertificate, readYardstick } from './format.js';

const yardstick = {
  updates: 672,
  cumulativeRankCorrelation: -0.09,
  perUpdateRankCorrelation: 0.24,
  certificateAboveMeasuredFraction: 0.496,
  meanMeasuredImprovement: 0.0012,
  meanExcess: -0.0013,
  meanExcessInterval: [-0.0027, 0.0001] as [number, number],
};

test('certificate − measured is read by where its interval lies, the rank correlation by size', () => {
  assert.equal(
    readYardstick(yardstick, true),
    'within noise of the measured improvement: tight; it ranks updates weakly',
  );
  assert.match(
    readYardstick(
      { ...yardstick, meanExcessInterval: [-0.256, -0.241], perUpdateRankCorrelation: 0.4 },
      true,
    ),
    /^below the measured improvement: a valid lower bound on average; it ranks updates by their measured effect$/,
  );
  assert.match(
    readYardstick({ ...yardstick, meanExcessInterval: [0.016, 0.019] }, false),
    /^above the measured improvement: read on its own batch the surrogate is optimistic/,
  );
  assert.match(
    readYardstick(
      { ...yardstick, meanExcessInterval: [0.016, 0.019], perUpdateRankCorrelation: -0.3 },
      true,
    ),
    /not a lower bound here; it ranks updates against their measured effect$/,
  );
  assert.match(
    readYardstick({ ...yardstick, meanExcessInterval: null, perUpdateRankCorrelation: null }, true),
    /^too few measured updates to compare$/,
  );
});

test('a certificate that is never positive is read as saying nothing', () => {
  const form = { meanCertificate: -0.25, certifiedFraction: 0, inSample: null, heldOut: null };
  assert.match(readCertificate(form), /never certifies an improvement/);
  assert.match(readCertificate({ ...form, certifiedFraction: 0.496 }), /for 49\.6% of updates/);
});

test('accuracy before and after is read against both 95% intervals', () => {
  const before = { accuracy: 0.331, interval: [0.302, 0.361] as [number, number], count: 1000 };
  const after = { accuracy: 0.564, interval: [0.533, 0.594] as [number, number], count: 1000 };
  assert.match(
    readAccuracy(before, after),
    /^\+23\.3 points, beyond both 95% intervals: the team improved$/,
  );
  assert.match(
    readAccuracy(before, { ...after, accuracy: 0.35, interval: [0.2, 0.5] }),
    /not told apart from noise/,
  );
  assert.match(readAccuracy(after, before), /got worse/);
});
