import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import type { LocalPolicy } from './policy.js';
import { rollout } from './rollout.js';
import { tinyTask, tinyTeam } from './test-support/tiny-team.js';

describe('per-agent turn limits', () => {
  test('an agent’s own maxTurnTokens bounds its turns, the protocol’s bounds the others', async () => {
    const team = tinyTeam();
    team.protocol.maxTurnTokens = 8;
    team.agents[0]!.maxTurnTokens = 2;
    const task = tinyTask();
    const problems = task.split('train', { seed: 0, count: 4 });
    const batch = await rollout({ team, task, problems, groupSize: 4, seed: 'limits' });
    const lengths = (agent: number) =>
      batch.trajectories.flatMap((trajectory) =>
        trajectory.turns
          .filter((turn) => turn.agentIndex === agent)
          .map((turn) => turn.tokens.length),
      );
    assert.ok(Math.max(...lengths(0)) <= 2);
    assert.ok(Math.max(...lengths(1)) > 2, 'the other agents keep the protocol’s limit');
  });

  test('a stop string ends the text before it and the tokens with the one that completed it', async () => {
    const policy = tinyTeam().agents[0]!.policy as LocalPolicy;
    const request = (seed: string) => ({ input: 'ab\nA:', random: new RandomGenerator(seed) });
    let stop: string | null = null;
    let seed = 0;
    let full;
    // Find a sample whose text is long enough to hold a stop string in its middle.
    for (; stop === null; seed++) {
      [full] = await policy.complete([request(String(seed))], { maxNewTokens: 12 });
      if (full!.text.length >= 5) stop = full!.text.slice(2, 4);
    }
    const [cut] = await policy.complete([request(String(seed - 1))], {
      maxNewTokens: 12,
      stop: [stop],
      keepHiddenStates: true,
    });
    assert.equal(cut!.text, full!.text.slice(0, full!.text.indexOf(stop)));
    // The kept tokens are the shortest prefix of the sampled ones whose text holds the string.
    const decode = (tokens: readonly number[]) =>
      policy.tokenizer.decode(tokens, { skipSpecialTokens: true });
    let kept = 1;
    while (!decode(full!.tokens.slice(0, kept)).includes(stop)) kept++;
    assert.deepEqual(cut!.tokens, full!.tokens.slice(0, kept));
    assert.deepEqual([...cut!.logProbs], [...full!.logProbs].slice(0, kept));
    assert.ok(kept < full!.tokens.length || full!.finishReason === 'stop');
    assert.equal(cut!.finishReason, 'stop');
    // Hidden states kept while sampling: those of the kept tokens.
    const width = policy.model.config.hiddenSize;
    const [whole] = await policy.complete([request(String(seed - 1))], {
      maxNewTokens: 12,
      keepHiddenStates: true,
    });
    assert.equal(full!.hiddenStates, undefined);
    assert.equal(whole!.hiddenStates!.length, full!.tokens.length * width);
    assert.deepEqual(cut!.hiddenStates, whole!.hiddenStates!.slice(0, kept * width));
  });
});
