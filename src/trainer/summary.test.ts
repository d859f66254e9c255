import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MetricsRecord } from './records.js';
import { stageImprovementStatistics } from './summary.js';

const stage = (rewardBefore: number, rewardAfter: number) =>
  ({ type: 'stage', rewardBefore, rewardAfter }) as unknown as MetricsRecord;

test('stage improvement: in-sample on the stage’s own problems, out-of-sample to the next stage', () => {
  const records = [
    stage(0.2, 0.5),
    { type: 'update', rewardBefore: 9 } as unknown as MetricsRecord,
    stage(0.3, 0.4),
    stage(0.25, 0.45),
  ];
  const statistics = stageImprovementStatistics(records);
  assert.ok(Math.abs(statistics.inSamplePerStage! - 0.2) < 1e-12);
  assert.ok(Math.abs(statistics.outOfSamplePerStage! - 0.025) < 1e-12);
  assert.deepEqual(stageImprovementStatistics([stage(0.2, 0.3)]), {
    inSamplePerStage: 0.3 - 0.2,
    outOfSamplePerStage: null,
  });
  assert.deepEqual(stageImprovementStatistics([]), {
    inSamplePerStage: null,
    outOfSamplePerStage: null,
  });
});
