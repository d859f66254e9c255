import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { createArithmeticChainTask } from './arithmetic-chain.js';
import { sampleDemonstration } from './demonstrations.js';

const problem = { id: 'example', prompt: '7+5|-3|+8', answer: '17' };

describe('arithmetic-chain', () => {
  const task = createArithmeticChainTask({ difficulty: 2, roles: 3 });
  const demonstrate = (role: number, previousTurns: string[]) =>
    task.demonstrator!.demonstrate(problem, { role, previousTurns });

  it('has each role evaluate its own segment from the previous turn', () => {
    assert.equal(demonstrate(0, []), '12');
    assert.equal(demonstrate(1, ['12']), '9');
    assert.equal(demonstrate(2, ['12', '9']), '17');
  });

  it('carries an upstream mistake through instead of silently fixing it', () => {
    assert.equal(demonstrate(1, ['13']), '10');
    assert.equal(demonstrate(2, ['13', '10']), '18');
    assert.equal(task.verify(problem, '18').correct, false);
  });

  it('recomputes from the prompt when the previous turn is not a number', () => {
    assert.equal(demonstrate(1, ['1x']), '9');
    assert.equal(demonstrate(2, ['12', '']), '17');
  });

  it('verifies the whole text as an integer', () => {
    assert.equal(task.verify(problem, ' 17\n').correct, true);
    assert.equal(task.verify(problem, '=17').correct, false);
    assert.equal(task.verify(problem, '17 18').correct, false);
  });

  it('describes a one-round protocol whose last turn is the answer', () => {
    assert.deepEqual(task.protocol.turnOrder, [0, 1, 2]);
    assert.equal(task.protocol.answerTurn, 2);
    assert.deepEqual(
      task.protocol.roles.map((role) => role.prompt),
      ['seg1', 'seg2', 'seg3'],
    );
  });

  it('puts the documented number of operations in each segment at each difficulty', () => {
    const expected = [
      { difficulty: 1, perRole: 1, operators: '+', maxOperand: 9 },
      { difficulty: 2, perRole: 1, operators: '+-', maxOperand: 9 },
      { difficulty: 3, perRole: 2, operators: '+-', maxOperand: 9 },
      { difficulty: 4, perRole: 2, operators: '+-', maxOperand: 99 },
      { difficulty: 5, perRole: 2, operators: '+-*', maxOperand: 99 },
    ];
    for (const level of expected) {
      const levelTask = createArithmeticChainTask({ difficulty: level.difficulty, roles: 4 });
      const seen = new Set<string>();
      for (const generated of levelTask.split('train', { seed: 1, count: 200 })) {
        const segments = generated.prompt.split('|');
        assert.equal(segments.length, 4);
        for (const [index, segment] of segments.entries()) {
          const operations = [...segment.matchAll(/([-+*])(\d+)/g)];
          assert.equal(operations.length, level.perRole, generated.prompt);
          assert.equal(/^\d/.test(segment), index === 0, generated.prompt);
          for (const operation of operations) {
            seen.add(operation[1]!);
            assert.ok(level.operators.includes(operation[1]!), generated.prompt);
            assert.ok(Number(operation[2]) <= level.maxOperand, generated.prompt);
          }
        }
        const partials = generated.metadata!.partials as number[];
        assert.ok(
          partials.every((value) => value >= 0),
          generated.prompt,
        );
        assert.equal(String(partials.at(-1)), generated.answer);
      }
      assert.equal([...seen].sort().join(''), [...level.operators].sort().join(''));
    }
  });

  it('makes every role matter: corrupting any one role alone often fails the team', () => {
    const problems = task.split('train', { seed: 4, count: 200 });
    for (let role = 0; role < 3; role++) {
      const mistakeRate = [0, 0, 0];
      mistakeRate[role] = 1;
      const random = new RandomGenerator(role);
      const failures = problems.filter(
        (generated) =>
          !sampleDemonstration({ task, problem: generated, random, mistakeRate }).result.correct,
      ).length;
      assert.ok(failures / problems.length > 0.9, `role ${role}: ${failures} failures`);
    }
  });

  it('works as a single agent with one segment', () => {
    const single = createArithmeticChainTask({ difficulty: 3, roles: 1 });
    const [generated] = single.split('eval', { seed: 2, count: 1 });
    const text = single.demonstrator!.demonstrate(generated!, { role: 0, previousTurns: [] });
    assert.equal(text, generated!.answer);
  });

  it('rejects bad options with the offending field', () => {
    assert.throws(() => createArithmeticChainTask({ difficulty: 6 }), ConfigError);
    assert.throws(() => createArithmeticChainTask({ roles: 0 }), /roles/);
    assert.throws(() => createArithmeticChainTask({ evalFraction: 1 }), /evalFraction/);
  });
});
