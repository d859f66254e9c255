import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { sampleDemonstration } from './demonstrations.js';
import { createWorkedChainTask } from './worked-chain.js';

const prompt = '1 A6 B2 C7 D3 E8 F5 G4 H1';
const problem = { id: 'p', prompt, answer: '11' };

describe('worked-chain', () => {
  test('each agent works its rule from the last digit the agent before it wrote', () => {
    const task = createWorkedChainTask({ agents: 3, steps: 4 });
    const demonstrate = (role: number, previousTurns: string[]) =>
      task.demonstrator!.demonstrate(problem, { role, previousTurns });
    // A: x → x + 6 from the start digit 1.
    const first = demonstrate(0, []);
    assert.equal(first, '1+6=7 7+6=13 3+6=9 9+6=15');
    // B continues from A's last result as written: 15 → 5, or a slipped 14 → 4.
    assert.equal(demonstrate(1, [first]), '5+2=7 7+2=9 9+2=11 1+2=3');
    assert.equal(demonstrate(1, ['1+6=7 7+6=13 3+6=9 9+6=14']), '4+2=6 6+2=8 8+2=10 0+2=2');
    // An unreadable turn: the chain is recomputed from the prompt.
    assert.equal(demonstrate(2, [first, 'no idea']), '3+7=10 0+7=7 7+7=14 4+7=11');
  });

  test('the answer is the last number of the last turn, exactly', () => {
    const task = createWorkedChainTask({ agents: 3 });
    assert.equal(task.verify(problem, '3+7=10 0+7=7 7+7=14 4+7=11').correct, true);
    assert.equal(task.verify(problem, '4+7=12').correct, false);
    assert.equal(task.verify(problem, '').correct, false);
    assert.equal(task.verify(problem, '11 and then 12').correct, false);
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
        previousTurns: ['1+6=7 7+6=13 3+6=9 9+6=15', '5+2=7 7+2=9 9+2=11 1+2=3'],
      });
      const slipped = task.demonstrator!.corrupt({
        problem,
        role: 2,
        previousTurns: ['1+6=7 7+6=13 3+6=9 9+6=15', '5+2=7 7+2=9 9+2=11 1+2=3'],
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
