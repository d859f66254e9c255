import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { sampleChatExchange } from './chat-skills.js';

/** The value of `a+b`, `a-b`, `a*b` or `a+b+c` at the end of a text, else null. */
function arithmeticAnswer(text: string): number | null {
  const match = /(?:^|\s)(\d+)([+*-])(\d+)(?:\+(\d+))?$/.exec(text);
  if (!match) return null;
  const [a, b, c] = [Number(match[1]), Number(match[3]), Number(match[4] ?? 0)];
  return match[2] === '+' ? a + b + c : match[2] === '-' ? a - b : a * b;
}

describe('the general model’s pretraining exchanges', () => {
  test('without mistakes, a question asked alone gets its right answer', () => {
    const random = new RandomGenerator('right');
    let checked = 0;
    for (let index = 0; index < 400; index++) {
      const { messages, reply } = sampleChatExchange(random, 0);
      const user = messages.filter((message) => message.role === 'user');
      if (user.length !== 1) continue;
      const expected = arithmeticAnswer(user[0]!.content);
      if (expected === null) continue;
      assert.equal(reply, String(expected), JSON.stringify(messages));
      checked++;
    }
    assert.ok(checked > 150, `${checked}`);
  });

  test('a later team member answers with the other agent’s reply, or checks it when told to', () => {
    const random = new RandomGenerator('team');
    let copies = 0;
    let checks = 0;
    for (let index = 0; index < 600; index++) {
      const { messages, reply } = sampleChatExchange(random, 0.5);
      if (messages.filter((message) => message.role === 'user').length !== 2) continue;
      const system = messages.find((message) => message.role === 'system')?.content ?? '';
      const other = messages.at(-1)!.content;
      assert.match(other, /^[\w]+: /, 'another agent’s turn is `name: text`');
      if (/Check|Verify|Correct/.test(system)) checks++;
      else if (other.includes(reply)) copies++;
    }
    assert.ok(copies > 40 && checks > 10, `${copies} copies, ${checks} checks`);
  });

  test('mistakes replace the reply at the given rate and are deterministic', () => {
    const draw = (seed: number, rate: number) =>
      sampleChatExchange(new RandomGenerator(seed), rate);
    let differing = 0;
    for (let seed = 0; seed < 300; seed++) {
      assert.deepEqual(draw(seed, 0.3), draw(seed, 0.3));
      const right = draw(seed, 0);
      const wrong = draw(seed, 1);
      if (JSON.stringify(right.messages) === JSON.stringify(wrong.messages)) {
        assert.notEqual(wrong.reply, right.reply);
        differing++;
      }
    }
    assert.ok(differing > 150, `${differing}`);
  });

  test('sums of two two-digit numbers, what a task in code asks most, are a sixth of the mixture', () => {
    const random = new RandomGenerator('sums');
    const draws = 3000;
    let sums = 0;
    let skills = 0;
    for (let index = 0; index < draws; index++) {
      const { messages } = sampleChatExchange(random, 0);
      const question = messages.filter((message) => message.role === 'user')[0]!.content;
      if (/(?:^|\s)[1-9]\d\+[1-9]\d$/.test(question)) sums++;
      if (!/[\d+*-]$/.test(question)) skills++;
    }
    assert.ok(sums / draws > 1 / 6, `${sums} of ${draws} exchanges add two two-digit numbers`);
    assert.ok(skills / draws > 0.15, `${skills} of ${draws} exchanges ask for a text skill`);
  });
});
