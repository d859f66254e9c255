import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { codesReading } from './convention-codes.js';
import { conventionSummary, createConventionTask, turnConventions } from './convention.js';
import { sampleDemonstration } from './demonstrations.js';
import { getTask } from './registry.js';

// The worked example of convention.ts: 107919 → 430242 → 763575 → 096808.
const problem = { id: 'p', prompt: '107919', answer: '096808' };

describe('convention', () => {
  const task = createConventionTask({ agents: 3 });
  const ideal = (role: number, previousTurns: string[]) =>
    task.demonstrator!.demonstrate(problem, { role, previousTurns });

  test('an ideal agent keeps the code in use; the last one answers in plain digits', () => {
    assert.equal(ideal(0, []), '430242', 'the first agent writes plain');
    // After a plain message B writes plain; after the cipher it writes the cipher, even when the
    // message shows no code (498646 reads both ways; the cipher reads the right number).
    assert.equal(ideal(1, ['430242']), '763575');
    assert.equal(ideal(1, ['38x535']), '498646');
    assert.equal(ideal(2, ['38x535', '498646']), '096808');
    assert.equal(ideal(2, ['430242', '763575']), '096808');
    // A message no code reads is recomputed from the prompt.
    assert.equal(ideal(2, ['430242', 'hello!']), '096808');
    assert.equal(task.verify(problem, ' 096808 ').correct, true);
    assert.equal(task.verify(problem, '721979').correct, false);
  });

  test('roles say who answers; a turn is one message of `digits` symbols', () => {
    assert.deepEqual(
      task.protocol.roles.map((role) => role.prompt),
      ['A>', 'B>', 'C='],
    );
    assert.equal(task.protocol.maxTurnChars, 6);
    assert.equal(createConventionTask({ agents: 8, digits: 4 }).protocol.roles[7]!.prompt, 'H=');
    for (const character of '0123456789xy>=ABCDEFGH ')
      assert.ok(task.alphabet.includes(character), character);
  });

  test('a base agent picks either code about half the time and reads ambiguous messages in it', () => {
    const random = new RandomGenerator('codes');
    let cipher = 0;
    let readAsCipher = 0;
    let ambiguousReads = 0;
    const problems = task.split('train', { seed: 3, count: 600 });
    for (const entry of problems) {
      const episode = sampleDemonstration({ task, problem: entry, random });
      const texts = episode.turns.map((turn) => turn.text);
      const codes = turnConventions(entry, texts, { agents: 3 });
      if (codes[0]!.writes[0] === 'cipher') cipher++;
      if (codesReading(texts[0]!, 6).length === 2) {
        ambiguousReads++;
        if (codes[1]!.reads.length === 1 && codes[1]!.reads[0] === 'cipher') readAsCipher++;
      }
      // Base agents read in the code they write.
      assert.deepEqual(
        codes[1]!.reads.filter((code) => codes[1]!.writes.includes(code)).length > 0,
        true,
      );
    }
    assert.ok(Math.abs(cipher / problems.length - 0.5) < 0.06, `${cipher}`);
    assert.ok(
      Math.abs(readAsCipher / ambiguousReads - 0.5) < 0.07,
      `${readAsCipher}/${ambiguousReads}`,
    );
  });

  test('mixed conventions make an untrained team fail most ambiguous handoffs: 60%, 47%, 33% at N = 2, 4, 8', async () => {
    const expected = { 2: 0.6, 4: 0.47, 8: 0.33 } as const;
    for (const agents of [2, 4, 8] as const) {
      const team = await getTask({ name: 'convention', agents });
      const random = new RandomGenerator(`team-${agents}`);
      const problems = team.split('train', { seed: 5, count: 1500 });
      const correct = problems.filter(
        (entry) => sampleDemonstration({ task: team, problem: entry, random }).result.correct,
      ).length;
      assert.ok(
        Math.abs(correct / problems.length - expected[agents]) < 0.04,
        `N = ${agents}: ${correct / problems.length}`,
      );
    }
  });

  test('a slip changes one symbol and keeps the code the turn is readable in', () => {
    const random = new RandomGenerator('slips');
    for (const text of ['430242', '38x535', '498646']) {
      for (let index = 0; index < 40; index++) {
        const slipped = task.demonstrator!.corrupt({
          problem,
          role: 0,
          previousTurns: [],
          text,
          random,
        });
        assert.notEqual(slipped, text);
        assert.equal([...slipped].filter((symbol, at) => symbol !== text[at]).length, 1);
        for (const code of codesReading(text, 6))
          assert.ok(codesReading(slipped, 6).includes(code), `${text} → ${slipped}`);
      }
    }
  });

  test('turnConventions tells how each turn read and wrote', () => {
    const codes = turnConventions(problem, ['38x535', '498646', '721979'], { agents: 3 });
    assert.deepEqual(codes[0], { reads: ['plain'], writes: ['cipher'] });
    // B read a message that showed its code: either bet reads it the same.
    assert.deepEqual(codes[1], { reads: ['plain', 'cipher'], writes: ['cipher'] });
    // C bet on plain: it read 498646 as 498646 and wrote 721979 (a wrong answer).
    assert.deepEqual(codes[2], { reads: ['plain'], writes: ['plain'] });
    // Read as the cipher and written in plain digits: an agent may untie the two. (269135 → 592468,
    // ambiguous, which the cipher spells 625397 → 825791 → 158024.)
    const second = { id: 'q', prompt: '269135', answer: '158024' };
    assert.deepEqual(turnConventions(second, ['625397', '825791'], { agents: 3 })[1], {
      reads: ['cipher'],
      writes: ['plain'],
    });
    assert.deepEqual(turnConventions(problem, ['430243'], { agents: 3 })[0], {
      reads: [],
      writes: [],
    });
    assert.throws(
      () => turnConventions(problem, ['1', '2', '3', '4'], { agents: 3 }),
      /4 turns for a team of 3 agents/,
    );
  });

  test('problems are deterministic, shared by every team size, and split by prompt', () => {
    const two = createConventionTask({ agents: 2 }).split('train', { seed: 4, count: 60 });
    const eight = createConventionTask({ agents: 8 }).split('train', { seed: 4, count: 60 });
    assert.deepEqual(
      two,
      createConventionTask({ agents: 2 }).split('train', { seed: 4, count: 60 }),
    );
    assert.deepEqual(
      two.map((entry) => entry.prompt),
      eight.map((entry) => entry.prompt),
    );
    assert.ok(two.every((entry, index) => entry.answer !== eight[index]!.answer));
    const evalPrompts = new Set(
      task.split('eval', { seed: 4, count: 200 }).map((entry) => entry.prompt),
    );
    assert.ok(
      task.split('train', { seed: 4, count: 500 }).every((entry) => !evalPrompts.has(entry.prompt)),
    );
  });

  test('bad options and prompts are clear errors', async () => {
    await assert.rejects(getTask({ name: 'convention', agents: 1 }), /agents/);
    await assert.rejects(getTask({ name: 'convention', agents: 9 }), /agents/);
    await assert.rejects(getTask({ name: 'convention', codes: 3 }), /codes/);
    assert.throws(
      () =>
        task.demonstrator!.demonstrate(
          { ...problem, prompt: '12 34' },
          { role: 0, previousTurns: [] },
        ),
      /cannot read the prompt "12 34" \(expected a start number of 6 digits\)/,
    );
  });

  test('conventionSummary: a coordinated team reads every ambiguous message right, a base team half', () => {
    const team = createConventionTask({ agents: 4 });
    const problems = team.split('train', { seed: 8, count: 400 });
    const random = new RandomGenerator('summary');
    const ideal = problems.map((entry) => {
      const turns: string[] = [];
      for (let role = 0; role < 4; role++)
        turns.push(team.demonstrator!.demonstrate(entry, { role, previousTurns: turns }));
      return { problem: entry, turns };
    });
    const coordinated = conventionSummary(ideal, { agents: 4 });
    assert.deepEqual(
      coordinated.map((agent) => [
        agent.cipherWriteShare,
        agent.coordinatedShare,
        agent.wrongShare,
      ]),
      [
        [0, null, 0],
        [0, 1, 0],
        [0, 1, 0],
        [null, 1, 0],
      ],
    );
    const base = conventionSummary(
      problems.map((entry) => ({
        problem: entry,
        turns: sampleDemonstration({ task: team, problem: entry, random }).turns.map(
          (turn) => turn.text,
        ),
      })),
      { agents: 4 },
    );
    assert.ok(base[1]!.ambiguousReads > 280, `${base[1]!.ambiguousReads}`);
    for (const agent of base.slice(1))
      assert.ok(Math.abs(agent.coordinatedShare! - 0.5) < 0.15, JSON.stringify(agent));
    for (const agent of base.slice(0, 3))
      assert.ok(Math.abs(agent.cipherWriteShare! - 0.5) < 0.08, JSON.stringify(agent));
  });
});
