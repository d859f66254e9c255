import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MetricsRecord } from '../trainer/records.js';
import {
  occupancyGapByUpdateIndex,
  surrogateErrors,
  surrogateErrorSlopes,
  type ScalingRun,
} from './scaling-analysis.js';
import { outcomes, staleFreshRatios, trainingCurve } from './scaling-outcomes.js';

const update = (stage: number, updateIndex: number, fields: Record<string, number | null>) =>
  ({ type: 'update', stage, updateIndex, ...fields }) as unknown as MetricsRecord;
const stageRecord = (stage: number, generatedTokens: number, regression = false) =>
  ({ type: 'stage', stage, generatedTokens, regression }) as unknown as MetricsRecord;
const evaluation = (stage: number, generatedTokens: number, accuracy: number) =>
  ({ type: 'eval', stage, generatedTokens, accuracy }) as unknown as MetricsRecord;

/** A run whose every update has surrogate 0 and held-out improvement `error` (+ stage jitter). */
function errorRun(agents: number, schedule: string, error: number, seed = 0): ScalingRun {
  const records: MetricsRecord[] = [];
  for (let stage = 1; stage <= 6; stage++) {
    for (let index = 0; index < agents; index++) {
      records.push(
        update(stage, index, {
          surrogate: 0,
          heldOutImprovement: error * (1 + 0.1 * ((stage % 3) - 1)),
          heldOutImprovementStandardError: 0.01,
          occupancyGap: index === 0 ? null : 0.1 * index + 0.01 * (stage % 2),
        }),
      );
    }
    records.push(stageRecord(stage, 1000 * stage));
  }
  return { agents, schedule, seed, records };
}

describe('scaling analysis', () => {
  test('the occupancy gap grows with the update index, stages as units', () => {
    const rows = occupancyGapByUpdateIndex([errorRun(3, 'teamtr', 0.01)]);
    assert.deepEqual(
      rows.map((row) => row.updateIndex),
      [1, 2],
    );
    assert.ok(Math.abs(rows[0]!.gap.value - 0.105) < 1e-12);
    assert.ok(Math.abs(rows[1]!.gap.value - 0.205) < 1e-12);
    const [low, high] = rows[0]!.gap.interval!;
    assert.ok(low >= 0.1 - 1e-12 && high <= 0.11 + 1e-12 && low < high);
  });

  test('a surrogate error ∝ N² has slope 2, and the stale/fresh ratio reads it', () => {
    const runs = [2, 4, 8].flatMap((agents) => [
      errorRun(agents, 'teamtr', 0.001 * agents),
      errorRun(agents, 'sequential-stale', 0.001 * agents * agents),
    ]);
    const slopes = surrogateErrorSlopes(runs);
    const fresh = slopes.find((row) => row.schedule === 'teamtr')!;
    const stale = slopes.find((row) => row.schedule === 'sequential-stale')!;
    assert.ok(Math.abs(fresh.slope.value - 1) < 1e-9, String(fresh.slope.value));
    assert.ok(Math.abs(stale.slope.value - 2) < 1e-9, String(stale.slope.value));
    assert.ok(stale.slope.interval![0] < 2 && stale.slope.interval![1] > 2);
    const errors = surrogateErrors(runs);
    const row = errors.find((entry) => entry.agents === 4 && entry.schedule === 'teamtr')!;
    assert.equal(row.updates, 24);
    assert.ok(Math.abs(row.absoluteError.value - 0.004) < 1e-12);
    assert.ok(Math.abs(row.noiseFloor - 0.01 * Math.sqrt(2 / Math.PI)) < 1e-12);
    const ratios = staleFreshRatios(
      [4, 8].flatMap((agents) =>
        ['teamtr', 'sequential-stale'].map((schedule) => ({
          agents,
          schedule,
          stageErrors: [[schedule === 'teamtr' ? 0.001 * agents : 0.001 * agents * agents]],
        })),
      ),
    );
    assert.deepEqual(
      ratios.map((ratio) => [ratio.agents, ratio.ratio.value]),
      [
        [4, 4],
        [8, 8],
      ],
    );
  });

  test('matched updates read every schedule at the fewest stages any reached', () => {
    const run = (schedule: string, stages: number, accuracies: number[]): ScalingRun => ({
      agents: 2,
      schedule,
      seed: 0,
      records: [
        ...accuracies.map((accuracy, index) => evaluation(index * 2, index * 100, accuracy)),
        ...Array.from({ length: stages }, (_unused, index) =>
          stageRecord(index + 1, (index + 1) * 50, index === 0),
        ),
      ],
    });
    const rows = outcomes([
      run('teamtr', 4, [0.2, 0.3, 0.4]),
      run('joint', 8, [0.2, 0.25, 0.3, 0.35, 0.5]),
    ]);
    const joint = rows.find((row) => row.schedule === 'joint')!;
    assert.equal(joint.matchedStage, 4);
    assert.equal(joint.accuracyAtMatchedTokens.value, 0.5);
    assert.equal(joint.accuracyAtMatchedUpdates.value, 0.3);
    assert.equal(joint.regressionsAtMatchedUpdates.value, 1);
    const curve = trainingCurve(
      [run('teamtr', 4, [0.2, 0.4]), { ...run('teamtr', 4, [0.3, 0.2]), seed: 1 }],
      { agents: 2, schedule: 'teamtr' },
    );
    assert.deepEqual(curve[1]!.band, [0.2, 0.4]);
    assert.ok(Math.abs(curve[1]!.accuracy - 0.3) < 1e-12);
  });
});
