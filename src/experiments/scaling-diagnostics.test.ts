import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MetricsRecord } from '../trainer/records.js';
import type { ScalingRun } from './scaling-analysis.js';
import { certificateCoverage, occupancyRange, resamplingDecisions } from './scaling-diagnostics.js';
import { analyzeScaling, formatScalingReport } from './scaling-report.js';

const update = (fields: Record<string, unknown>) =>
  ({
    type: 'update',
    stage: 1,
    updateIndex: 0,
    globalUpdate: 0,
    ...fields,
  }) as unknown as MetricsRecord;

describe('grid diagnostics', () => {
  test('certificate coverage: the bound against the measured improvement and its noise', () => {
    const records = [
      // held; held; fails but within 1.96 SE; fails beyond noise.
      [-0.02, 0.01],
      [0.0, 0.0],
      [0.03, 0.01],
      [0.1, 0.01],
    ].map(([bound, improvement]) =>
      update({
        heldOutSecondOrderCertificateLowerBound: bound,
        heldOutCertificateLowerBound: -5,
        heldOutImprovement: improvement,
        heldOutImprovementStandardError: 0.015,
        heldOutBoundConfidence: 0.95,
      }),
    );
    const [row] = certificateCoverage([{ agents: 2, schedule: 'teamtr', seed: 0, records }]);
    assert.equal(row!.updates, 4);
    assert.equal(row!.stated, 0.95);
    assert.equal(row!.held.successes, 2);
    assert.equal(row!.heldWithinNoise.successes, 3);
    assert.equal(row!.firstOrderHeld.successes, 4);
    assert.ok(Math.abs(row!.floorIfValid - 0.95 * 0.975) < 1e-15);
    // 3 of 4 within noise: Wilson's upper end (0.95…) reaches 0.926.
    assert.equal(row!.consistentWithStated, true);
    const failing = Array.from({ length: 40 }, () =>
      update({
        heldOutSecondOrderCertificateLowerBound: 0.1,
        heldOutImprovement: 0,
        heldOutImprovementStandardError: 0.01,
        heldOutBoundConfidence: 0.95,
      }),
    );
    const [refuted] = certificateCoverage([
      { agents: 2, schedule: 'teamtr', seed: 0, records: [...records, ...failing] },
    ]);
    assert.equal(refuted!.heldWithinNoise.successes, 3);
    assert.equal(refuted!.consistentWithStated, false);
    assert.ok(row!.held.interval![0] < 0.5 && row!.held.interval![1] > 0.5);
    assert.ok(Math.abs(row!.meanExcess - 0.02) < 1e-12);
    assert.ok(Math.abs(row!.noiseFloor - 0.015 * Math.sqrt(2 / Math.PI)) < 1e-15);
  });

  test('lazy decisions: the resample rate, batches per stage and the stale/slack ratio', () => {
    const decision = (resampled: boolean, staleTerm: number, slack: number) => ({
      resampled,
      totalVariation: staleTerm / 2,
      totalVariationInterval: [0, 1],
      effectiveSampleSize: 0.9,
      staleTerm,
      slack,
      threshold: 1,
    });
    const records = [
      update({ stage: 1, resampling: decision(false, 0.01, 0.02) }),
      update({ stage: 1, resampling: decision(true, 0.05, 0.01) }),
      update({ stage: 1, resampling: null }),
      { type: 'stage', stage: 1 },
      update({ stage: 2, resampling: decision(true, 0.04, 0) }),
      update({ stage: 2, resampling: null }),
      { type: 'stage', stage: 2 },
    ] as unknown as MetricsRecord[];
    const [row] = resamplingDecisions([{ agents: 3, schedule: 'lazy', seed: 0, records }]);
    assert.equal(row!.decisions, 3);
    assert.equal(row!.resampled.successes, 2);
    // First and closing batch of each of 2 stages, and 2 resamples: 3 batches a stage.
    assert.equal(row!.batchesPerStage, 3);
    assert.equal(row!.medianStaleOverSlack, 5);
    assert.ok(Math.abs(row!.meanTotalVariation - 0.1 / 6) < 1e-15);
  });

  test('the occupancy range counts estimates outside [0, 1]', () => {
    const records = [0.2, 0.9, null].map((gap) => update({ occupancyGap: gap }));
    const [row] = occupancyRange([{ agents: 2, schedule: 'joint', seed: 0, records }]);
    assert.deepEqual([row!.updates, row!.largest, row!.outside], [2, 0.9, 0]);
  });

  test('the report states its baseline, a takeaway per table and what each figure aggregates', () => {
    const runs: ScalingRun[] = ['sequential-stale', 'lazy'].map((schedule) => ({
      agents: 2,
      schedule,
      seed: 0,
      records: [
        { type: 'eval', stage: 0, generatedTokens: 0, at: 'start', accuracy: 0.5 },
        { type: 'stage', stage: 1, generatedTokens: 100, regression: false },
        { type: 'eval', stage: 1, generatedTokens: 100, at: 'end', accuracy: 0.6 },
      ] as unknown as MetricsRecord[],
    }));
    const report = analyzeScaling(runs, { task: 'worked-chain' });
    assert.equal(report.baseline, 'sequential-stale');
    const markdown = formatScalingReport(report);
    assert.match(markdown, /Scaling grid on worked-chain \(2 runs\), paired with sequential-stale/);
    assert.match(markdown, /lazy: N = 2 within noise/);
    assert.match(markdown, /within 0\.00%/);
    assert.match(markdown, /percentile bootstrap over seeds/);
  });
});
