import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { TransformerLM } from '../../nn/transformer.js';
import { AdamW, defaultAdamWSettings } from '../../optim/adamw.js';
import { RandomGenerator } from '../../util/random.js';
import type { StageRecord, UpdateRecord } from '../records.js';
import type { RunState } from '../run/run-state.js';
import { confidentlyNegative, stageHeldOutChange, stageRollbackHook } from './stage-rollback.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { readRecords } from '../test-support/run-files.js';
import { train } from '../trainer.js';
import type { LocalUnit } from '../update/units.js';

const measured = (heldOutImprovement: number | null, heldOutImprovementStandardError = 0.03) => ({
  heldOutImprovement,
  heldOutImprovementStandardError,
});

describe('the held-out change of a stage', () => {
  test('sums the updates’ improvements and combines their standard errors', () => {
    const evidence = stageHeldOutChange([measured(-0.04, 0.03), measured(-0.02, 0.04)])!;
    assert.ok(Math.abs(evidence.change - -0.06) < 1e-15);
    assert.ok(Math.abs(evidence.standardError - 0.05) < 1e-15);
    assert.equal(confidentlyNegative(evidence, 1), true);
    assert.equal(confidentlyNegative(evidence, 2), false);
    assert.equal(stageHeldOutChange([measured(0.1), measured(null)]), null);
    assert.equal(stageHeldOutChange([]), null);
    assert.equal(confidentlyNegative({ change: -1, standardError: 0 }, 1), false);
  });
});

function tinyUnit(): LocalUnit {
  const model = new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: 12,
      hiddenSize: 8,
      layers: 1,
      heads: 2,
      intermediateSize: 16,
      maxPositions: 16,
    },
    new RandomGenerator(3),
  );
  const optimizer = new AdamW(model.trainableParameters(), {
    ...defaultAdamWSettings,
    learningRate: 0.1,
  });
  return { name: 'solver', model, optimizer, agentIndices: [0], delta: 0.01, learningRate: 0.1 };
}

/** One optimizer step on a made-up gradient: moves the parameters and the Adam state. */
function step(unit: LocalUnit): void {
  for (const { tensor } of unit.model.trainableParameters()) {
    tensor.grad = new Float32Array(tensor.size).fill(0.5);
  }
  unit.optimizer.update();
}

const stage = { stage: 3, generatedTokens: 1200 } as StageRecord;
const state = {} as RunState;

describe('stage rollback', () => {
  test('a confidently negative stage puts parameters and optimizer state back; others stay', async () => {
    const unit = tinyUnit();
    const hook = stageRollbackHook([unit], { confidence: 2 });
    const before = unit.model.trainableParameters().map(({ tensor }) => tensor.data.slice());
    const optimizerBefore = JSON.stringify(unit.optimizer.stateDict());

    await hook.beforeStage(state);
    step(unit);
    const kept = await hook.afterStage(state, stage, [measured(0.05, 0.03)] as UpdateRecord[]);
    assert.deepEqual(kept, []);
    assert.notDeepEqual(unit.model.trainableParameters()[0]!.tensor.data, before[0]);

    const moved = unit.model.trainableParameters().map(({ tensor }) => tensor.data.slice());
    const optimizerMoved = JSON.stringify(unit.optimizer.stateDict());
    assert.notEqual(optimizerMoved, optimizerBefore);
    await hook.beforeStage(state);
    step(unit);
    const records = await hook.afterStage(state, stage, [measured(-0.1, 0.03)] as UpdateRecord[]);
    assert.deepEqual(
      unit.model.trainableParameters().map(({ tensor }) => tensor.data),
      moved,
    );
    assert.equal(JSON.stringify(unit.optimizer.stateDict()), optimizerMoved);
    assert.equal(records.length, 1);
    assert.deepEqual(records[0], {
      type: 'rollback',
      stage: 3,
      generatedTokens: 1200,
      heldOutChange: -0.1,
      heldOutChangeStandardError: 0.03,
      agents: ['solver'],
    });
  });
});

describe('stage rollback in a run', () => {
  const cleanup: string[] = [];
  after(async () => {
    const { rm } = await import('node:fs/promises');
    await Promise.all(cleanup.map((directory) => rm(directory, { recursive: true, force: true })));
  });

  test('exactly the confidently negative stages are rolled back, and it needs held-out prompts', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const rollback = { confidence: 0.25 };
    const config = {
      ...fixture.config,
      budget: { generatedTokens: 100_000, maxStages: 4 },
      // Steps far too large, so that some stages make the team worse.
      optimizer: { learningRate: 0.05 },
      trustRegion: { ...fixture.config.trustRegion, delta: 5, rollback },
      certificate: { heldOutProblems: 3 },
    };
    const runDirectory = `${fixture.directory}/rollback`;
    await train({ config, runDirectory });
    const records = readRecords(runDirectory);
    const stages = records.filter((record) => record.type === 'stage');
    assert.equal(stages.length, 4);
    const decisions: boolean[] = [];
    for (const stageRecord of stages) {
      const updates = records.filter(
        (record): record is UpdateRecord =>
          record.type === 'update' && record.stage === stageRecord.stage,
      );
      const evidence = stageHeldOutChange(updates)!;
      const rolledBack = records.some(
        (record) => record.type === 'rollback' && record.stage === stageRecord.stage,
      );
      assert.equal(rolledBack, confidentlyNegative(evidence, rollback.confidence));
      decisions.push(rolledBack);
    }
    // This seed's steps make one stage confidently worse (−0.83 ± 0.12) and the others not.
    assert.ok(decisions.includes(true) && decisions.includes(false), String(decisions));

    await assert.rejects(
      train({
        config: { ...config, certificate: { heldOutProblems: 0 } },
        runDirectory: `${fixture.directory}/unmeasured`,
      }),
      /trustRegion\.rollback.*needs certificate\.heldOutProblems > 0/,
    );
  });
});
