import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { sampleDemonstration } from './demonstrations.js';
import { createSolveCheckFinalTask } from './solve-check-final.js';

const problem = { id: 'example', prompt: '47+38', answer: '85' };

describe('solve-check-final', () => {
  const task = createSolveCheckFinalTask({ difficulty: 3, roles: 3 });
  const demonstrate = (role: number, previousTurns: string[]) =>
    task.demonstrator!.demonstrate(problem, { role, previousTurns });

  it('solver answers, checker approves a right answer, finalizer copies it', () => {
    assert.equal(demonstrate(0, []), '85');
    assert.equal(demonstrate(1, ['85']), 'ok');
    assert.equal(demonstrate(2, ['85', 'ok']), '85');
  });

  it('checker corrects a wrong answer and the finalizer takes the correction', () => {
    assert.equal(demonstrate(1, ['86']), '85');
    assert.equal(demonstrate(2, ['86', '85']), '85');
  });

  it('finalizer trusts the checker, so a rubber-stamped mistake sinks the team', () => {
    assert.equal(demonstrate(2, ['86', 'ok']), '86');
    assert.equal(task.verify(problem, '86').correct, false);
  });

  it('finalizer answers itself only when no turn holds a number', () => {
    assert.equal(demonstrate(2, ['??', 'hm']), '85');
  });

  it('with several checkers each checks the latest proposal', () => {
    const team = createSolveCheckFinalTask({ difficulty: 3, roles: 4 });
    const run = (role: number, previousTurns: string[]) =>
      team.demonstrator!.demonstrate(problem, { role, previousTurns });
    assert.equal(run(2, ['86', '84']), '85');
    assert.equal(run(2, ['86', '85']), 'ok');
    assert.equal(run(3, ['86', '85', 'ok']), '85');
    assert.deepEqual(
      team.protocol.roles.map((role) => role.name),
      ['solver', 'checker-1', 'checker-2', 'finalizer'],
    );
  });

  it('a wrong solver alone never fails the team, a wrong checker or finalizer often does', () => {
    const problems = task.split('train', { seed: 6, count: 200 });
    const failureCount = (mistakeRate: number[]) => {
      const random = new RandomGenerator(mistakeRate.join(','));
      return problems.filter(
        (generated) =>
          !sampleDemonstration({ task, problem: generated, random, mistakeRate }).result.correct,
      ).length;
    };
    assert.equal(failureCount([1, 0, 0]), 0);
    assert.ok(failureCount([1, 1, 0]) > 150);
    assert.ok(failureCount([0, 1, 0]) > 150);
    assert.equal(failureCount([0, 0, 1]), 200);
  });

  it('verifies the finalizer text as a whole integer, so "ok" is not an answer', () => {
    assert.equal(task.verify(problem, '85').correct, true);
    assert.equal(task.verify(problem, 'ok').correct, false);
  });
});
