import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RandomGenerator } from '../util/random.js';
import { numericMistake, stringMistake } from './mistakes.js';

describe('numericMistake', () => {
  it('never returns the value and keeps non-negative values non-negative', () => {
    fc.assert(
      fc.property(fc.integer({ min: -100_000, max: 100_000 }), fc.integer(), (value, seed) => {
        const mistake = numericMistake(value, new RandomGenerator(seed));
        return Number.isInteger(mistake) && mistake !== value && (value < 0 || mistake >= 0);
      }),
    );
  });
  it('stays close to the value: off by one or ten, or a digit-level slip', () => {
    const random = new RandomGenerator(1);
    const seen = new Set<number>();
    for (let draw = 0; draw < 200; draw++) seen.add(numericMistake(35, random));
    assert.deepEqual(
      [...seen].sort((first, second) => first - second),
      [3, 25, 34, 36, 45, 53, 355],
    );
  });
});

describe('stringMistake', () => {
  it('never returns the text and only uses its characters and the given letters', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-d]{0,8}$/), fc.integer(), (text, seed) => {
        const mistake = stringMistake(text, 'abcd', new RandomGenerator(seed));
        return (
          mistake !== text &&
          /^[a-d]*$/.test(mistake) &&
          Math.abs(mistake.length - text.length) <= 1
        );
      }),
    );
  });
});
