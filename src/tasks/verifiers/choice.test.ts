import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../util/errors.js';
import { extractChoice, verifyChoice } from './choice.js';

describe('extractChoice', () => {
  const cases: [string, string | null][] = [
    ['(B)', 'B'],
    ['B.', 'B'],
    ['B) because it is', 'B'],
    ['Answer: B', 'B'],
    ['answer:c', 'C'],
    ['the answer is b', 'B'],
    ['The answer is (d).', 'D'],
    ['Final answer - E', 'E'],
    ['  b  ', 'B'],
    ['I think (A) fits, but the answer is C.', 'C'],
    ['Options (A) and (C) are close; (C) wins', 'C'],
    ['A cat sat on a mat', null],
    ['the answer is a bit unclear', null],
    ['Answer: F', null],
    ['answered', null],
    ['', null],
  ];
  for (const [text, expected] of cases) {
    it(`reads ${JSON.stringify(text)} as ${expected}`, () => {
      assert.equal(extractChoice(text), expected);
    });
  }
  it('honours a custom letter set', () => {
    assert.equal(extractChoice('Answer: F', { letters: 'ABCDEF' }), 'F');
    assert.equal(extractChoice('(E)', { letters: 'abcd' }), null);
  });
  it('rejects letter sets that are not letters', () => {
    assert.throws(() => extractChoice('A', { letters: 'A1' }), ConfigError);
  });
});

describe('verifyChoice', () => {
  it('reads the reference the same way as the text', () => {
    assert.equal(verifyChoice('(b)', 'Answer: B').correct, true);
    assert.equal(verifyChoice('B', 'the answer is b').reward, 1);
  });
  it('reports a missing choice', () => {
    const result = verifyChoice('A', 'no idea');
    assert.equal(result.correct, false);
    assert.equal(result.details.extracted, null);
    assert.match(result.details.explanation, /no choice/);
  });
  it('reports a wrong choice', () => {
    const result = verifyChoice('A', '(C)');
    assert.equal(result.details.extracted, 'C');
    assert.equal(result.reward, 0);
  });
});
