import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { prepareRun } from './run-context.js';
import { Stage } from './stage.js';
import { createTrainingFixture } from './test-support/fixture.js';

test('every update of a stage is measured before the next one, once', async () => {
  const fixture = await createTrainingFixture();
  try {
    const context = await prepareRun({
      config: fixture.config,
      runDirectory: path.join(fixture.directory, 'run'),
    });
    const plan = {
      stage: 1,
      seed: 'measured',
      problems: context.task.split('train', { seed: 1, count: 2 }),
      heldOutProblems: context.task.split('train', { seed: 2, count: 2 }),
      tokensBefore: 0,
      updatesBefore: 0,
    };
    const { team, units } = context.built;
    const stage = new Stage(plan, team, context.task, units, context.settings);
    const batch = await stage.sample();
    const [first, second] = stage.updateOrder();
    const update = await stage.update(first!, batch);
    // The held-out batch would still be the team before `update`: the next certificate's
    // evidence and the watch's count of updates would be wrong.
    await assert.rejects(stage.update(second!, batch), /never measured.*stage\.measureUpdate/);
    const tokensBefore = stage.measurementTokens;
    const measured = await stage.measureUpdate(update);
    assert.ok(measured.heldOut, 'measured on the held-out prompts');
    assert.ok(stage.measurementTokens > tokensBefore, 'the held-out batch drawn again');
    await assert.rejects(stage.measureUpdate(update), /latest update, once/);
    await stage.measureUpdate(await stage.update(second!, batch));
    for (const loaded of context.built.models) loaded.model.destroy();
  } finally {
    rmSync(fixture.directory, { recursive: true, force: true });
  }
});
