import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { sampleDemonstration } from './demonstrations.js';
import { createWorkedChainTask } from './worked-chain.js';

const prompt = '1 67';
const problem = { id: 'p', prompt, answer: '9' };

describe('worked-chain', () => {
  test('each agent continues from the last digit the agent before it wrote', () => {
    const task = createWorkedChainTask({ agents: 3, steps: 4 });
    const demonstrate = (role: number, previousTurns: string[]) =>
      task.demonstrator!.demonstrate(problem, { role, previousTurns });
    // A: steps alternate +6 and +7 from the start digit 1.
    const first = demonstrate(0, []);
    assert.equal(first, '1+6=7 7+7=14 4+6=10 0+7=7');
    // B continues from A's last result as written: 7, or a slipped 8.
    assert.equal(demonstrate(1, [first]), '7+6=13 3+7=10 0+6=6 6+7=13');
    assert.equal(demonstrate(1, ['1+6=7 7+7=14 4+6=10 0+7=8']), '8+6=14 4+7=11 1+6=7 7+7=14');
    // An unreadable turn: the chain is recomputed from the prompt.
    assert.equal(demonstrate(2, [first, 'no idea']), '3+6=9 9+7=16 6+6=12 2+7=9');
  });

  test('the answer is the last number of the last turn, exactly', () => {
    const task = createWorkedChainTask({ agents: 3 });
    assert.equal(task.verify(problem, '3+6=9 9+7=16 6+6=12 2+7=9').correct, true);
    assert.equal(task.verify(problem, '2+7=8').correct, false);
    assert.equal(task.verify(problem, '').correct, false);
    assert.equal(task.verify(problem, '9 and then 10').correct, false);
  });

  test('problems are deterministic from the seed and shared by teams of every size', () => {
    const small = createWorkedChainTask({ agents: 2 }).split('train', { seed: 4, count: 50 });
    const again = createWorkedChainTask({ agents: 2 }).split('train', { seed: 4, count: 50 });
    const large = createWorkedChainTask({ agents: 8 }).split('train', { seed: 4, count: 50 });
    assert.deepEqual(small, again);
    assert.deepEqual(
      small.map((entry) => entry.prompt),
      large.map((entry) => entry.prompt),
    );
    // The answers differ: a team of 8 carries the chain further.
    assert.ok(small.some((entry, index) => entry.answer !== large[index]!.answer));
    const evalPrompts = new Set(
      createWorkedChainTask({ agents: 2 })
        .split('eval', { seed: 4, count: 50 })
        .map((p) => p.prompt),
    );
    assert.ok(small.every((entry) => !evalPrompts.has(entry.prompt)));
  });

  test('turns are long: about 9 characters a step, within the turn budget', () => {
    for (const steps of [6, 9]) {
      const task = createWorkedChainTask({ agents: 8, steps });
      const random = new RandomGenerator('lengths');
      const lengths: number[] = [];
      for (const entry of task.split('train', { seed: 1, count: 100 })) {
        const demonstration = sampleDemonstration({
          task,
          problem: entry,
          random,
          mistakeRate: 0.3,
        });
        // Without a slip the team is always right.
        if (!demonstration.turns.some((turn) => turn.corrupted))
          assert.equal(demonstration.result.correct, true);
        lengths.push(...demonstration.turns.map((turn) => turn.text.length));
      }
      assert.ok(Math.max(...lengths) <= task.protocol.maxTurnChars);
      assert.ok(Math.min(...lengths) >= 6 * steps - 1, `${Math.min(...lengths)} at ${steps} steps`);
    }
  });

  test('a mistake differs from the ideal turn and propagates to the answer', () => {
    const task = createWorkedChainTask({ agents: 3, steps: 4 });
    const random = new RandomGenerator('mistakes');
    let wrongAnswers = 0;
    for (let trial = 0; trial < 200; trial++) {
      const ideal = task.demonstrator!.demonstrate(problem, {
        role: 2,
        previousTurns: ['1+6=7 7+7=14 4+6=10 0+7=7', '7+6=13 3+7=10 0+6=6 6+7=13'],
      });
      const slipped = task.demonstrator!.corrupt({
        problem,
        role: 2,
        previousTurns: ['1+6=7 7+7=14 4+6=10 0+7=7', '7+6=13 3+7=10 0+6=6 6+7=13'],
        text: ideal,
        random,
      });
      assert.notEqual(slipped, ideal);
      if (!task.verify(problem, slipped).correct) wrongAnswers++;
    }
    // A slip of ±10 before the last step keeps the last digit, and so the answer.
    assert.ok(wrongAnswers > 120, `${wrongAnswers} of 200`);
  });

  test('bad options name the setting', () => {
    assert.throws(() => createWorkedChainTask({ agents: 9 }), /agents/);
    assert.throws(() => createWorkedChainTask({ steps: 0 }), /steps/);
  });
});
