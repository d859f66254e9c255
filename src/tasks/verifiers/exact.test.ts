import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verifyExact } from './exact.js';

describe('verifyExact', () => {
  it('trims by default and is case-sensitive by default', () => {
    assert.equal(verifyExact('abc', '  abc\n').correct, true);
    assert.equal(verifyExact('abc', 'ABC').correct, false);
  });
  it('folds case when asked', () => {
    const result = verifyExact('Paris', 'paris', { caseSensitive: false });
    assert.equal(result.correct, true);
    assert.match(result.details.explanation, /case-folded/);
  });
  it('keeps surrounding whitespace when trimming is off', () => {
    assert.equal(verifyExact('abc', ' abc', { trim: false }).correct, false);
  });
  it('collapses inner whitespace only when asked', () => {
    assert.equal(verifyExact('a b', 'a   b').correct, false);
    assert.equal(verifyExact('a b', 'a \t b', { collapseWhitespace: true }).correct, true);
  });
  it('reports what it compared', () => {
    const result = verifyExact(' x ', 'y');
    assert.deepEqual(
      {
        reward: result.reward,
        extracted: result.details.extracted,
        expected: result.details.expected,
      },
      { reward: 0, extracted: 'y', expected: 'x' },
    );
  });
});
