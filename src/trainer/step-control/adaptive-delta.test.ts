import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { train } from '../trainer.js';
import { nextDelta } from './adaptive-delta.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { readRecords } from '../test-support/run-files.js';

const settings = { growth: 2, shrink: 0.5, minDelta: 0.01, maxDelta: 0.05, confidence: 1 };
const evidence = (heldOutImprovement: number | null, heldOutImprovementStandardError = 0.1) => ({
  heldOutImprovement,
  heldOutImprovementStandardError,
  inRegion: true,
});

describe('nextDelta', () => {
  test('grows on a confident improvement in region, shrinks on a confident regression', () => {
    assert.equal(nextDelta(0.02, evidence(0.15), settings), 0.04);
    assert.equal(nextDelta(0.04, evidence(0.15), settings), 0.05);
    assert.equal(nextDelta(0.02, { ...evidence(0.15), inRegion: false }, settings), 0.02);
    assert.equal(nextDelta(0.04, evidence(-0.1), settings), 0.02);
    assert.equal(nextDelta(0.015, evidence(-0.2), settings), 0.01);
  });

  test('keeps δ without confident or usable evidence', () => {
    assert.equal(nextDelta(0.02, evidence(0.05), settings), 0.02);
    assert.equal(nextDelta(0.02, evidence(null), settings), 0.02);
    assert.equal(nextDelta(0.02, evidence(0.3, 0), settings), 0.02);
  });
});

describe('adaptive δ in a run', () => {
  const cleanup: string[] = [];
  after(async () => {
    const { rm } = await import('node:fs/promises');
    await Promise.all(cleanup.map((directory) => rm(directory, { recursive: true, force: true })));
  });

  test('each update runs at the δ its predecessors earned, and the run refuses it unmeasured', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const adaptiveDelta = { growth: 2, shrink: 0.5, minDelta: 0.001, maxDelta: 1, confidence: 0.5 };
    const config = {
      ...fixture.config,
      budget: { generatedTokens: 100_000, maxStages: 4 },
      trustRegion: { ...fixture.config.trustRegion, adaptiveDelta },
      certificate: { heldOutProblems: 3 },
    };
    const runDirectory = `${fixture.directory}/adaptive`;
    await train({ config, runDirectory });
    const updates = readRecords(runDirectory).filter((record) => record.type === 'update');
    const byAgent = new Map<string, typeof updates>();
    for (const update of updates)
      byAgent.set(update.agent, [...(byAgent.get(update.agent) ?? []), update]);
    for (const agentUpdates of byAgent.values()) {
      for (let index = 1; index < agentUpdates.length; index++) {
        const previous = agentUpdates[index - 1]!;
        assert.equal(
          agentUpdates[index]!.delta,
          nextDelta(previous.delta, previous, adaptiveDelta),
        );
      }
    }
    assert.ok(
      updates.some((update) => update.delta !== updates[0]!.delta),
      'δ never moved',
    );
    await assert.rejects(
      train({
        config: { ...config, certificate: { heldOutProblems: 0 } },
        runDirectory: `${fixture.directory}/unmeasured`,
      }),
      /trustRegion\.adaptiveDelta.*heldOutProblems/,
    );
  });
});
