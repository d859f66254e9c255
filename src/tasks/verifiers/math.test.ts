import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  extractAnswerLine,
  extractBoxed,
  normalizeMathAnswer,
  parseMathNumber,
  verifyMath,
} from './math.js';

describe('extractBoxed', () => {
  it('keeps nested braces whole', () => {
    assert.equal(extractBoxed('so \\boxed{\\frac{1}{2}} done'), '\\frac{1}{2}');
  });
  it('takes the last boxed answer', () => {
    assert.equal(extractBoxed('\\boxed{3} wait, no: \\boxed{4}'), '4');
  });
  it('skips a last box that never closes and falls back to an earlier one', () => {
    assert.equal(extractBoxed('\\boxed{7} and then \\boxed{\\frac{1}{2}'), '7');
  });
  it('does not count escaped braces', () => {
    assert.equal(extractBoxed('\\boxed{\\{1,2\\}}'), '\\{1,2\\}');
  });
  it('accepts a space before the brace and \\fbox', () => {
    assert.equal(extractBoxed('\\boxed {12}'), '12');
    assert.equal(extractBoxed('\\fbox{x+1}'), 'x+1');
  });
  it('returns null without a box', () => {
    assert.equal(extractBoxed('the answer is 5'), null);
  });
});

describe('extractAnswerLine', () => {
  it('reads the last Answer: line, in any case, up to the end of its line', () => {
    assert.equal(extractAnswerLine('Answer: 3\nmore thinking\nFinal answer: 42\nbye'), '42');
    assert.equal(extractAnswerLine('ANSWER:  -7  '), '-7');
    assert.equal(extractAnswerLine('**Answer:** 9'), '9');
    assert.equal(extractAnswerLine('**Final Answer**: 9'), '9');
  });
  it('ignores "answer" in the middle of a sentence and empty answers', () => {
    assert.equal(extractAnswerLine('my answer: 5 is wrong'), null);
    assert.equal(extractAnswerLine('Answer:   \n'), null);
  });
});

describe('normalizeMathAnswer and parseMathNumber', () => {
  const cases: [string, string, number | null][] = [
    ['$\\dfrac{3}{4}$', '\\frac{3}{4}', 0.75],
    ['\\left( 1, 2 \\right)', '(1,2)', null],
    ['90^\\circ', '90', 90],
    ['90^{\\circ}', '90', 90],
    ['5\\text{ cm}', '5cm', null],
    ['\\frac12', '\\frac12', 0.5],
    ['-\\frac{1}{2}', '-\\frac{1}{2}', -0.5],
    ['{12}.', '12', 12],
    [' 1,000 ', '1,000', 1000],
    ['\\! 3\\,000', '3000', 3000],
  ];
  for (const [raw, normalized, value] of cases) {
    it(`normalizes ${JSON.stringify(raw)}`, () => {
      assert.equal(normalizeMathAnswer(raw), normalized);
      assert.equal(parseMathNumber(normalized), value);
    });
  }
  it('leaves the left of \\leftarrow alone', () => {
    assert.equal(normalizeMathAnswer('\\leftarrow'), '\\leftarrow');
  });
});

describe('verifyMath', () => {
  it('compares a boxed fraction with a decimal reference as numbers', () => {
    const result = verifyMath('0.5', 'Thus \\boxed{\\frac{1}{2}}.');
    assert.equal(result.correct, true);
    assert.equal(result.details.extracted, '\\frac{1}{2}');
    assert.match(result.details.explanation, /as numbers/);
  });
  it('accepts a boxed reference answer', () => {
    assert.equal(verifyMath('\\boxed{-3}', 'Answer: -3').correct, true);
  });
  it('compares non-numbers as normalized strings', () => {
    assert.equal(verifyMath('x^2+1', 'we get \\boxed{x^2 + 1}').correct, true);
    const wrong = verifyMath('x^2+1', '\\boxed{x^2-1}');
    assert.equal(wrong.correct, false);
    assert.match(wrong.details.explanation, /normalized strings/);
  });
  it('reads thousands separators and negative numbers', () => {
    assert.equal(verifyMath('1000', '\\boxed{1,000}').correct, true);
    assert.equal(verifyMath('-12', '\\boxed{-12}').correct, true);
    assert.equal(verifyMath('-12', '\\boxed{12}').correct, false);
  });
  it('falls back to the whole text, or to nothing when asked', () => {
    assert.equal(verifyMath('7', ' 7 \n').correct, true);
    const strict = verifyMath('7', '7', { fallback: 'none' });
    assert.equal(strict.correct, false);
    assert.equal(strict.details.extracted, null);
  });
  it('prefers the box over an Answer: line', () => {
    assert.equal(verifyMath('4', 'Answer: 3\n\\boxed{4}').correct, true);
  });
});
