import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { prepareRun } from './run-context.js';
import { Stage } from './stage.js';
import { createTrainingFixture } from './test-support/fixture.js';

test('a stage keeps the sampler’s hidden states for agents whose products sum in one order', async () => {
  const fixture = await createTrainingFixture();
  try {
    // A LoRA agent (frozen base: one summation order) beside agents trained in full in float32.
    const config = {
      ...fixture.config,
      agents: fixture.config.agents!.map((agent, index) =>
        index === 0 ? { ...agent, lora: { rank: 2 } } : agent,
      ),
    };
    const context = await prepareRun({ config, runDirectory: path.join(fixture.directory, 'run') });
    const plan = {
      stage: 1,
      seed: 'kept',
      problems: context.task.split('train', { seed: 1, count: 2 }),
      heldOutProblems: [],
      tokensBefore: 0,
      updatesBefore: 0,
    };
    const { team, units } = context.built;
    const stage = new Stage(plan, team, context.task, units, context.settings);
    const batch = await stage.sample();
    const hiddenSize = team.agents[0]!.policy.model!.config.hiddenSize;
    for (const trajectory of batch.trajectories)
      for (const turn of trajectory.turns) {
        if (turn.agentIndex !== 0) assert.equal(turn.hiddenStates, undefined);
        else assert.equal(turn.hiddenStates?.length, turn.tokens.length * hiddenSize);
      }
    for (const loaded of context.built.models) loaded.model.destroy();
  } finally {
    rmSync(fixture.directory, { recursive: true, force: true });
  }
});
