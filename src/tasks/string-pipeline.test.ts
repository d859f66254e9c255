import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { sampleDemonstration } from './demonstrations.js';
import { createStringPipelineTask } from './string-pipeline.js';

describe('string-pipeline', () => {
  const task = createStringPipelineTask({ difficulty: 3, roles: 3 });
  const demonstrateAll = (prompt: string) => {
    const problem = { id: 'example', prompt, answer: '' };
    const turns: string[] = [];
    for (let role = 0; role < prompt.split('|').length; role++) {
      turns.push(task.demonstrator!.demonstrate(problem, { role, previousTurns: turns }));
    }
    return turns;
  };

  it('applies one stage per role to the previous turn', () => {
    assert.deepEqual(demonstrateAll('rev|sort|uniq:cabad'), ['dabac', 'aabcd', 'abcd']);
    assert.deepEqual(demonstrateAll('rot|swap|rev:abcd'), ['bcda', 'acdb', 'bdca']);
  });

  it('handles words too short to change', () => {
    assert.deepEqual(demonstrateAll('swap|rot|rev:a'), ['a', 'a', 'a']);
    assert.deepEqual(demonstrateAll('uniq|sort|rot:'), ['', '', '']);
  });

  it('acts on what the previous turn says, mistakes included', () => {
    const problem = { id: 'example', prompt: 'rev|sort|uniq:cabad', answer: 'abcd' };
    const text = task.demonstrator!.demonstrate(problem, { role: 1, previousTurns: [' dxbac '] });
    assert.equal(text, 'abcdx');
  });

  it('verifies by exact match after trimming', () => {
    const problem = { id: 'example', prompt: 'rev|sort|uniq:cabad', answer: 'abcd' };
    assert.equal(task.verify(problem, 'abcd\n').correct, true);
    assert.equal(task.verify(problem, 'ABCD').correct, false);
    assert.equal(task.verify(problem, 'abdc').correct, false);
  });

  it('draws words and stages from the level tables', () => {
    const expected = [
      { difficulty: 1, lengths: [3, 4], letters: 'abcd', stages: 'rev rot swap' },
      { difficulty: 2, lengths: [4, 5], letters: 'abcde', stages: 'rev rot sort swap' },
      { difficulty: 3, lengths: [4, 6], letters: 'abcdef', stages: 'rev rot sort swap uniq' },
      { difficulty: 4, lengths: [5, 7], letters: 'abcdefgh', stages: 'rev rot sort swap uniq' },
      { difficulty: 5, lengths: [7, 9], letters: 'abcdefgh', stages: 'rev rot sort swap uniq' },
    ];
    for (const level of expected) {
      const levelTask = createStringPipelineTask({ difficulty: level.difficulty, roles: 3 });
      const stagesSeen = new Set<string>();
      const lettersSeen = new Set<string>();
      for (const problem of levelTask.split('train', { seed: 9, count: 300 })) {
        const [stageText, word] = problem.prompt.split(':') as [string, string];
        assert.ok(word.length >= level.lengths[0]! && word.length <= level.lengths[1]!, word);
        for (const letter of word) lettersSeen.add(letter);
        for (const stage of stageText.split('|')) stagesSeen.add(stage);
      }
      assert.equal([...stagesSeen].sort().join(' '), level.stages);
      assert.equal([...lettersSeen].sort().join(''), level.letters);
    }
  });

  it('makes every role matter: corrupting any one role alone often fails the team', () => {
    const problems = task.split('train', { seed: 4, count: 200 });
    for (let role = 0; role < 3; role++) {
      const mistakeRate = [0, 0, 0];
      mistakeRate[role] = 1;
      const random = new RandomGenerator(role);
      const failures = problems.filter(
        (problem) => !sampleDemonstration({ task, problem, random, mistakeRate }).result.correct,
      ).length;
      // later stages can hide an upstream slip (sort undoes a swap), so not every one fails
      assert.ok(failures / problems.length > 0.5, `role ${role}: ${failures} failures`);
    }
  });

  it('names the prompt it cannot read', () => {
    const problem = { id: 'bad', prompt: 'rev|flip:abc', answer: 'x' };
    assert.throws(
      () => task.demonstrator!.demonstrate(problem, { role: 0, previousTurns: [] }),
      (error: unknown) => error instanceof TeamtrError && /"rev\|flip:abc"/.test(error.message),
    );
  });
});
