import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { createArithmeticChainTask } from './arithmetic-chain.js';
import { sampleDemonstration } from './demonstrations.js';
import type { Task } from './types.js';

describe('sampleDemonstration', () => {
  const task = createArithmeticChainTask({ difficulty: 2, roles: 3 });
  const problems = task.split('train', { seed: 1, count: 300 });

  it('corrupts each role at its own rate', () => {
    const random = new RandomGenerator(5);
    const corruptedPerRole = [0, 0, 0];
    for (const problem of problems) {
      const episode = sampleDemonstration({ task, problem, random, mistakeRate: [0, 0.5, 1] });
      for (const turn of episode.turns) if (turn.corrupted) corruptedPerRole[turn.role]!++;
    }
    assert.equal(corruptedPerRole[0], 0);
    assert.ok(corruptedPerRole[1]! > 110 && corruptedPerRole[1]! < 190, `${corruptedPerRole[1]}`);
    assert.equal(corruptedPerRole[2], 300);
  });

  it('lets later turns react to earlier mistakes', () => {
    const random = new RandomGenerator(2);
    for (const problem of problems.slice(0, 50)) {
      const episode = sampleDemonstration({ task, problem, random, mistakeRate: [1, 0, 0] });
      assert.equal(
        episode.turns[1]!.text,
        task.demonstrator!.demonstrate(problem, {
          role: 1,
          previousTurns: [episode.turns[0]!.text],
        }),
      );
    }
  });

  it('reports the answer turn and its verification', () => {
    const episode = sampleDemonstration({
      task,
      problem: problems[0]!,
      random: new RandomGenerator(0),
    });
    assert.equal(episode.finalText, episode.turns[2]!.text);
    assert.equal(episode.finalText, problems[0]!.answer);
    assert.equal(episode.result.correct, true);
  });

  it('refuses bad mistake rates and tasks without a demonstrator', () => {
    const random = new RandomGenerator(0);
    const problem = problems[0]!;
    assert.throws(
      () => sampleDemonstration({ task, problem, random, mistakeRate: 1.5 }),
      TeamtrError,
    );
    assert.throws(
      () => sampleDemonstration({ task, problem, random, mistakeRate: [0, 1] }),
      /list of 3/,
    );
    const bare: Task = { ...task, demonstrator: undefined };
    assert.throws(() => sampleDemonstration({ task: bare, problem, random }), /no demonstrator/);
  });
});
