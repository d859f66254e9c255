import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { rollout } from './rollout.js';
import { tinyTask, tinyTeam } from './test-support/tiny-team.js';
import type { TeamBatch } from './types.js';

/** Pearson χ² statistic of two samples' category counts (homogeneity test). */
function chiSquare(
  left: Map<string, number>,
  right: Map<string, number>,
): { statistic: number; degrees: number } {
  const keys = new Set([...left.keys(), ...right.keys()]);
  const totalLeft = [...left.values()].reduce((a, b) => a + b, 0);
  const totalRight = [...right.values()].reduce((a, b) => a + b, 0);
  let statistic = 0;
  let degrees = -1;
  for (const key of keys) {
    const a = left.get(key) ?? 0;
    const b = right.get(key) ?? 0;
    const expectedLeft = ((a + b) * totalLeft) / (totalLeft + totalRight);
    const expectedRight = ((a + b) * totalRight) / (totalLeft + totalRight);
    if (expectedLeft < 5 || expectedRight < 5) continue; // sparse cells would dominate the statistic
    statistic += (a - expectedLeft) ** 2 / expectedLeft + (b - expectedRight) ** 2 / expectedRight;
    degrees++;
  }
  return { statistic, degrees };
}

function transcripts(batch: TeamBatch): Map<string, number> {
  const counts = new Map<string, number>();
  for (const trajectory of batch.trajectories) {
    const key = trajectory.turns.map((turn) => turn.text).join('|');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** χ² critical value at p = 0.001 (Wilson–Hilferty approximation). */
function critical(degrees: number): number {
  const z = 3.09;
  return degrees * (1 - 2 / (9 * degrees) + z * Math.sqrt(2 / (9 * degrees))) ** 3;
}

describe('rollouts', () => {
  test('records exact tokens, log-probs and turn boundaries; common random numbers repeat a batch', async () => {
    const team = tinyTeam();
    const task = tinyTask();
    const problems = task.split('train', { seed: 0, count: 3 });
    const first = await rollout({ team, task, problems, groupSize: 2, seed: 's' });
    const again = await rollout({ team, task, problems, groupSize: 2, seed: 's' });
    assert.equal(first.trajectories.length, 6);
    assert.deepEqual(
      first.trajectories.map((t) => t.turns.map((turn) => turn.tokens)),
      again.trajectories.map((t) => t.turns.map((turn) => turn.tokens)),
    );
    for (const trajectory of first.trajectories) {
      assert.deepEqual(
        trajectory.turns.map((turn) => turn.agentIndex),
        [0, 1, 2],
      );
      for (const turn of trajectory.turns) assert.equal(turn.logProbs.length, turn.tokens.length);
      // Each later agent's input contains the earlier turns' texts, tagged.
      assert.ok(trajectory.turns[2]!.inputIds.length > trajectory.turns[1]!.inputIds.length);
    }
    assert.equal(
      first.generatedTokens,
      first.trajectories.reduce(
        (total, t) => total + t.turns.reduce((sum, turn) => sum + turn.tokens.length, 0),
        0,
      ),
    );
  });

  test('suffix resampling has the distribution of a full resample (and reusing a changed turn does not)', async () => {
    const team = tinyTeam({ seed: 3 });
    const task = tinyTask();
    const problems = task.split('train', { seed: 0, count: 1 });
    const groupSize = 1500;
    const before = await rollout({ team, task, problems, groupSize, seed: 'before' });
    // "Update" the middle speaker: scale its weights, which changes its policy.
    const changed = team.agents[1]!.policy.model!;
    for (const { tensor } of changed.namedParameters())
      tensor.data.forEach(
        (value, index) => (tensor.data[index] = value * 0.5 + 0.3 * Math.sin(index)),
      );
    const suffix = await rollout({
      team,
      task,
      problems,
      groupSize,
      seed: 'after-suffix',
      reuse: { previous: before, fromTurn: 1 },
    });
    const full = await rollout({ team, task, problems, groupSize, seed: 'after-full' });
    const wrong = await rollout({
      team,
      task,
      problems,
      groupSize,
      seed: 'after-wrong',
      reuse: { previous: before, fromTurn: 2 },
    });
    assert.equal(suffix.generatedTokens < full.generatedTokens, true);
    const valid = chiSquare(transcripts(suffix), transcripts(full));
    const invalid = chiSquare(transcripts(wrong), transcripts(full));
    assert.ok(
      valid.degrees >= 3 && invalid.degrees >= 3,
      'too few distinct transcripts for the test to have power',
    );
    assert.ok(
      valid.statistic < critical(valid.degrees),
      `suffix vs full: χ² ${valid.statistic.toFixed(1)} on ${valid.degrees} df`,
    );
    assert.ok(
      invalid.statistic > critical(invalid.degrees),
      `reusing the changed turn must be detected: χ² ${invalid.statistic.toFixed(1)} on ${invalid.degrees} df`,
    );
    for (const model of team.agents.map((agent) => agent.policy.model!)) model.destroy();
  });

  test('suffix resampling is refused where it is invalid', async () => {
    const team = tinyTeam();
    const task = tinyTask();
    const problems = task.split('train', { seed: 0, count: 2 });
    const before = await rollout({ team, task, problems, groupSize: 2, seed: 'x' });
    team.protocol.turnOrder = [0, 1, 2, 0];
    await assert.rejects(
      rollout({
        team,
        task,
        problems,
        groupSize: 2,
        seed: 'y',
        reuse: { previous: before, fromTurn: 1 },
      }),
      /single-round/,
    );
    team.protocol.turnOrder = [0, 1, 2];
    await assert.rejects(
      rollout({
        team,
        task,
        problems: task.split('eval', { seed: 0, count: 2 }),
        groupSize: 2,
        seed: 'y',
        reuse: { previous: before, fromTurn: 1 },
      }),
      /same problems/,
    );
  });
});

describe('rollouts past a model context', () => {
  test('a turn that cannot fit after its input names the settings to change', async () => {
    const team = tinyTeam({ agents: 1, seed: 2 });
    const task = tinyTask(1);
    const positions = team.agents[0]!.policy.model!.config.maxPositions;
    await assert.rejects(
      rollout({
        team: { ...team, protocol: { ...team.protocol, maxTurnTokens: positions } },
        task,
        problems: task.split('train', { seed: 0, count: 1 }),
        groupSize: 1,
        seed: 'long',
      }),
      /its turn may take \d+ more \(protocol\.maxTurnTokens\), past its model's \d+ positions; shorten the role prompt \(agents\[\]\.rolePrompt\)/,
    );
  });
});
