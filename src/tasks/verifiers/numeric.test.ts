import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { findNumbers, numbersClose, parseNumber, verifyNumeric } from './numeric.js';

describe('parseNumber', () => {
  const cases: [string, number | null][] = [
    ['12', 12],
    ['  -7 ', -7],
    ['+3.5', 3.5],
    ['\u22124', -4],
    ['.5', 0.5],
    ['12.', 12],
    ['1,000', 1000],
    ['-1,234,567.25', -1234567.25],
    ['3/4', 0.75],
    ['-7 / 2', -3.5],
    ['1e3', 1000],
    ['2.5E-4', 0.00025],
    ['1/0', null],
    ['1,00', null],
    ['12a', null],
    ['', null],
    ['- 3', null],
    ['1.2.3', null],
  ];
  for (const [text, expected] of cases) {
    it(`reads ${JSON.stringify(text)} as ${expected}`, () => {
      assert.equal(parseNumber(text), expected);
    });
  }

  it('round-trips every safe integer and every finite double printed by JavaScript', () => {
    fc.assert(fc.property(fc.integer(), (value) => parseNumber(String(value)) === value));
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        const parsed = parseNumber(String(value));
        return parsed !== null && (parsed === value || (parsed === 0 && value === 0));
      }),
    );
  });

  it('reads integers written with thousands separators', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e12 }), (value) => {
        return parseNumber(value.toLocaleString('en-US')) === value;
      }),
    );
  });
});

describe('findNumbers', () => {
  it('does not read the minus of a subtraction as a sign', () => {
    assert.deepEqual(
      findNumbers('7-3=4').map((found) => found.value),
      [7, 3, 4],
    );
  });
  it('keeps the sign of a standalone negative number', () => {
    assert.deepEqual(
      findNumbers('so x = -3, or (-2)').map((found) => found.value),
      [-3, -2],
    );
  });
  it('ignores digits glued to words', () => {
    assert.deepEqual(
      findNumbers('x2 and 3rd and 5').map((found) => found.value),
      [5],
    );
  });
  it('reads thousands separators and fractions in text', () => {
    assert.deepEqual(
      findNumbers('about 1,000 people, 3/4 of them').map((found) => found.value),
      [1000, 0.75],
    );
  });
});

describe('numbersClose', () => {
  it('uses the larger of the absolute and relative tolerances', () => {
    assert.equal(numbersClose(1, 1.05, { absoluteTolerance: 0.1, relativeTolerance: 0 }), true);
    assert.equal(numbersClose(1, 1.2, { absoluteTolerance: 0.1, relativeTolerance: 0 }), false);
    assert.equal(numbersClose(1000, 1009, { absoluteTolerance: 0, relativeTolerance: 0.01 }), true);
    assert.equal(
      numbersClose(1000, 1011, { absoluteTolerance: 0, relativeTolerance: 0.01 }),
      false,
    );
  });
  it('by default tells apart integers a million apart by one', () => {
    assert.equal(numbersClose(1_000_000, 1_000_001), false);
    assert.equal(numbersClose(0.1 + 0.2, 0.3), true);
  });
});

describe('verifyNumeric', () => {
  it('takes the last number by default', () => {
    const result = verifyNumeric('1000', 'first 12, then the total is 1,000.');
    assert.equal(result.correct, true);
    assert.equal(result.reward, 1);
    assert.equal(result.details.extracted, '1,000');
  });
  it('compares fractions with decimals', () => {
    assert.equal(verifyNumeric('3/4', '0.75').correct, true);
    assert.equal(verifyNumeric('0.75', ' 3/4 ').correct, true);
  });
  it('handles negative answers', () => {
    assert.equal(verifyNumeric('-5', 'the result is -5').correct, true);
    assert.equal(verifyNumeric('-5', 'the result is 5').correct, false);
  });
  it('in whole mode rejects text around the number', () => {
    const result = verifyNumeric('12', '=12', { extract: 'whole' });
    assert.equal(result.correct, false);
    assert.equal(result.details.extracted, null);
    assert.equal(verifyNumeric('12', ' 12\n', { extract: 'whole' }).correct, true);
  });
  it('says when there is no number', () => {
    const result = verifyNumeric('4', 'four');
    assert.equal(result.reward, 0);
    assert.match(result.details.explanation, /no number/);
  });
  it('says when the reference is not a number', () => {
    const result = verifyNumeric('abc', '4');
    assert.equal(result.correct, false);
    assert.match(result.details.explanation, /reference answer "abc" is not a number/);
  });
});
