import assert from 'node:assert/strict';
import { test } from 'node:test';
import { certificateStatistics } from './certificate-statistics.js';
import type { MetricsRecord } from './records.js';

const update = (fields: Record<string, number | null>) =>
  ({ type: 'update', kl: 0.001, delta: 0.01, ...fields }) as unknown as MetricsRecord;

test('each certificate against each yardstick: excess with its interval, rank, fraction', () => {
  const records = [
    update({ certificate: -0.3, secondOrderCertificate: 0.02, measuredImprovement: 0.01 }),
    update({ certificate: -0.2, secondOrderCertificate: 0.04, measuredImprovement: 0.03 }),
    update({ certificate: -0.1, secondOrderCertificate: -0.01, measuredImprovement: 0.05 }),
  ].map((record) => ({ ...record, heldOutImprovement: null }));
  const statistics = certificateStatistics(records as MetricsRecord[]);
  const second = statistics.secondOrder!.inSample!;
  // certificate − measured: 0.01, 0.01, −0.06 → mean −0.01333, sd 0.04041, se 0.02333.
  assert.ok(Math.abs(second.meanExcess! + 0.04 / 3) < 1e-12);
  const halfWidth = 1.96 * Math.sqrt((2 * (0.01 + 0.04 / 3) ** 2 + (0.06 - 0.04 / 3) ** 2) / 2 / 3);
  assert.ok(Math.abs(second.meanExcessInterval![1] - second.meanExcess! - halfWidth) < 1e-12);
  assert.equal(second.certificateAboveMeasuredFraction, 2 / 3);
  assert.equal(statistics.secondOrder!.certifiedFraction, 2 / 3);
  assert.equal(statistics.firstOrder.certifiedFraction, 0);
  // Negative certificates add up downhill while the improvements add up uphill.
  assert.equal(statistics.firstOrder.inSample!.cumulativeRankCorrelation, -1);
  assert.equal(statistics.heldOut, null);
  assert.equal(statistics.heldOutBatch, null);
});

test('runs recorded before the second-order certificate report it as null', () => {
  const statistics = certificateStatistics([
    update({ certificate: -0.3, measuredImprovement: 0.01 }),
  ]);
  assert.equal(statistics.secondOrder, null);
  assert.equal(statistics.firstOrder.meanCertificate, -0.3);
});
