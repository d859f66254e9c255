/**
 * One suite every built-in task must pass, at every difficulty and several team sizes:
 * deterministic splits, disjoint train/eval, demonstrations that verify, corruptions that differ
 * and sometimes sink the team, texts inside the declared alphabet and the size budget.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { TeamtrError } from '../util/errors.js';
import { createArithmeticChainTask } from './arithmetic-chain.js';
import { sampleDemonstration } from './demonstrations.js';
import { createSolveCheckFinalTask } from './solve-check-final.js';
import { createStringPipelineTask } from './string-pipeline.js';
import type { BuiltInTask as Task } from './types.js';

const factories: Record<string, (options: { difficulty: number; roles: number }) => Task> = {
  'arithmetic-chain': createArithmeticChainTask,
  'string-pipeline': createStringPipelineTask,
  'solve-check-final': createSolveCheckFinalTask,
};

const difficulties = [1, 2, 3, 4, 5];

function inAlphabet(task: Task, text: string): boolean {
  return [...text].every((character) => task.alphabet.includes(character));
}

for (const [taskName, create] of Object.entries(factories)) {
  describe(`${taskName} (built-in task contract)`, () => {
    it('generates the same problems from the same seed and different ones from another', () => {
      for (const difficulty of difficulties) {
        const task = create({ difficulty, roles: 3 });
        const first = task.split('train', { seed: 11, count: 40 });
        assert.deepEqual(
          create({ difficulty, roles: 3 }).split('train', { seed: 11, count: 40 }),
          first,
        );
        const other = task.split('train', { seed: 12, count: 40 });
        assert.notDeepEqual(
          other.map((problem) => problem.prompt),
          first.map((problem) => problem.prompt),
        );
        assert.equal(new Set(first.map((problem) => problem.id)).size, first.length);
      }
    });

    it('never shares a prompt between train and eval, whatever the seeds', () => {
      for (const difficulty of difficulties) {
        const task = create({ difficulty, roles: 3 });
        const evalPrompts = new Set(
          [1, 2]
            .flatMap((seed) => task.split('eval', { seed, count: 60 }))
            .map((problem) => problem.prompt),
        );
        const trainProblems = [1, 3].flatMap((seed) => task.split('train', { seed, count: 300 }));
        const shared = trainProblems.filter((problem) => evalPrompts.has(problem.prompt));
        assert.deepEqual(shared, [], `difficulty ${difficulty}`);
      }
    });

    it('gives distinct eval prompts and rejects a missing count', () => {
      const task = create({ difficulty: 2, roles: 3 });
      const evalProblems = task.split('eval', { seed: 5, count: 100 });
      assert.equal(new Set(evalProblems.map((problem) => problem.prompt)).size, 100);
      assert.throws(() => task.split('train', { seed: 5 }), TeamtrError);
    });

    it('demonstrations verify as correct for every seed, difficulty and team size', () => {
      for (const difficulty of difficulties) {
        for (const roles of [2, 3, 5]) {
          const task = create({ difficulty, roles });
          const random = new RandomGenerator(`${taskName}-${difficulty}-${roles}`);
          for (const problem of task.split('train', { seed: difficulty * 10 + roles, count: 60 })) {
            const episode = sampleDemonstration({ task, problem, random });
            assert.equal(episode.result.correct, true, `${problem.prompt} → ${episode.finalText}`);
            assert.equal(episode.result.reward, 1);
            assert.equal(episode.turns.length, roles);
          }
        }
      }
    });

    it('keeps every text inside the alphabet and the size budget of a tiny model', () => {
      for (const difficulty of difficulties) {
        const task = create({ difficulty, roles: 3 });
        for (const role of task.protocol.roles)
          assert.ok(inAlphabet(task, role.prompt), role.prompt);
        const random = new RandomGenerator(difficulty);
        for (const problem of task.split('train', { seed: difficulty, count: 80 })) {
          assert.ok(inAlphabet(task, problem.prompt + problem.answer), problem.prompt);
          const noisy = sampleDemonstration({ task, problem, random, mistakeRate: 0.5 });
          for (const turn of noisy.turns) {
            assert.ok(inAlphabet(task, turn.text), `${turn.text} for ${problem.prompt}`);
          }
          for (const turn of sampleDemonstration({ task, problem, random }).turns) {
            assert.ok(turn.text.length <= task.protocol.maxTurnChars, turn.text);
          }
          // prompt line + three tagged turn lines ("0:" tag, newline) must fit in 96 characters
          const contextLength = problem.prompt.length + 1 + 3 * (task.protocol.maxTurnChars + 3);
          assert.ok(contextLength <= 96, `${problem.prompt}: ${contextLength} characters`);
        }
      }
    });

    it('corruptions always differ from the ideal text and are deterministic', () => {
      for (const difficulty of difficulties) {
        const task = create({ difficulty, roles: 3 });
        const demonstrator = task.demonstrator!;
        for (const problem of task.split('train', { seed: 3, count: 40 })) {
          const previousTurns: string[] = [];
          for (let role = 0; role < 3; role++) {
            const text = demonstrator.demonstrate(problem, { role, previousTurns });
            const request = { problem, role, previousTurns, text };
            const corrupted = demonstrator.corrupt({
              ...request,
              random: new RandomGenerator(role),
            });
            assert.notEqual(corrupted, text);
            assert.equal(
              demonstrator.corrupt({ ...request, random: new RandomGenerator(role) }),
              corrupted,
            );
            previousTurns.push(text);
          }
        }
      }
    });

    it('corrupted episodes often fail, and the same seed corrupts the same way', () => {
      for (const difficulty of difficulties) {
        const task = create({ difficulty, roles: 3 });
        const problems = task.split('train', { seed: 8, count: 100 });
        const run = () => {
          const random = new RandomGenerator(99);
          return problems.map(
            (problem) =>
              sampleDemonstration({ task, problem, random, mistakeRate: 1 }).result.correct,
          );
        };
        const outcomes = run();
        const failureRate = outcomes.filter((correct) => !correct).length / outcomes.length;
        assert.ok(failureRate > 0.5, `difficulty ${difficulty}: failure rate ${failureRate}`);
        assert.deepEqual(run(), outcomes);
      }
    });

    it('rejects demonstrations outside the default one-round protocol', () => {
      const task = create({ difficulty: 1, roles: 3 });
      const [problem] = task.split('train', { seed: 1, count: 1 });
      assert.throws(
        () => task.demonstrator!.demonstrate(problem!, { role: 1, previousTurns: [] }),
        /after exactly 1 turns/,
      );
      assert.throws(
        () => task.demonstrator!.demonstrate(problem!, { role: 3, previousTurns: ['1', '2', '3'] }),
        /role must be 0\.\.2/,
      );
    });

    it('scores a wrong final answer 0', () => {
      const task = create({ difficulty: 3, roles: 3 });
      for (const problem of task.split('eval', { seed: 2, count: 20 })) {
        assert.equal(task.verify(problem, problem.answer).reward, 1);
        assert.equal(task.verify(problem, `${problem.answer}1`).reward, 0);
        assert.equal(task.verify(problem, '').correct, false);
      }
    });
  });
}
