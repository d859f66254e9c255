import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import {
  chainValues,
  codesReading,
  decode,
  drawStart,
  encode,
  isAmbiguous,
  step,
} from './convention-codes.js';

const digitsOf = (text: string) => [...text].map(Number);

describe('the convention codes', () => {
  test('both codes spell every number and read it back', () => {
    const number = digitsOf('0123456789');
    assert.equal(encode(number, 'plain'), '0123456789');
    assert.equal(encode(number, 'cipher'), 'xy58369472');
    for (const code of ['plain', 'cipher'] as const)
      assert.deepEqual(decode(encode(number, code), code, 10), number);
  });

  test('the cipher moves every digit 2–9 to another digit: no symbol means the same in both', () => {
    for (let digit = 2; digit < 10; digit++) {
      const symbol = encode([digit], 'cipher');
      assert.match(symbol, /^[2-9]$/);
      assert.notEqual(symbol, String(digit));
    }
  });

  test('a message shows its code unless it holds only 2–9; then it reads both ways, differently', () => {
    assert.deepEqual(codesReading('430242', 6), ['plain']);
    assert.deepEqual(codesReading('38x535', 6), ['cipher']);
    assert.deepEqual(codesReading('498646', 6), ['plain', 'cipher']);
    assert.notDeepEqual(decode('498646', 'plain', 6), decode('498646', 'cipher', 6));
    assert.deepEqual(codesReading('0x2345', 6), [], 'a 0 and an x: neither code');
    assert.deepEqual(codesReading('49864', 6), [], 'wrong length');
    assert.deepEqual(codesReading('49864a', 6), [], 'a foreign symbol');
    // Whether a number's message is ambiguous does not depend on the code it is written in.
    for (const number of ['763575', '430242', '222222', '999991'].map(digitsOf)) {
      const both = codesReading(encode(number, 'plain'), 6).length === 2;
      assert.equal(both, isAmbiguous(number));
      assert.equal(codesReading(encode(number, 'cipher'), 6).length === 2, both);
    }
  });

  test('every agent adds 3 to every digit, modulo 10', () => {
    assert.deepEqual(step(digitsOf('107919')), digitsOf('430242'));
    assert.deepEqual(
      chainValues(digitsOf('107919'), 3).map((value) => value.join('')),
      ['430242', '763575', '096808'],
    );
  });
});

describe('drawStart', () => {
  const patternOf = (start: number[], handoffs: number) =>
    chainValues(start, handoffs)
      .map((value) => (isAmbiguous(value) ? 'a' : '-'))
      .join('');

  test('is deterministic and meets the handoff rates it can (0.85 → 0.83, 0.2 → ≈ 0.2)', () => {
    const draw = (seed: string) => {
      const random = new RandomGenerator(seed);
      return Array.from({ length: 4000 }, () =>
        drawStart(random, 6, 7, { first: 0.85, later: 0.2 }),
      );
    };
    const starts = draw('rates');
    assert.deepEqual(starts.slice(0, 50), draw('rates').slice(0, 50));
    const rates = Array.from(
      { length: 7 },
      (_, handoff) =>
        starts.filter((start) => patternOf(start, 7)[handoff] === 'a').length / starts.length,
    );
    assert.ok(Math.abs(rates[0]! - 0.83) < 0.03, `first handoff ${rates[0]}`);
    for (const rate of rates.slice(1, 6)) assert.ok(Math.abs(rate - 0.21) < 0.04, `${rates}`);
    // A step of 3 makes every digit 0 or 1 at one of any seven handoffs: the last is rarer.
    assert.ok(rates[6]! < 0.12, `${rates}`);
  });

  test('draws uniformly among the numbers that have the drawn pattern', () => {
    // Two digits, three handoffs, every pattern equally likely: exact probabilities by
    // enumerating all 100 numbers, against 40,000 draws.
    const byPattern = new Map<string, number>();
    for (let number = 0; number < 100; number++) {
      const pattern = patternOf([Math.floor(number / 10), number % 10], 3);
      byPattern.set(pattern, (byPattern.get(pattern) ?? 0) + 1);
    }
    const random = new RandomGenerator('uniform');
    const counts = new Array<number>(100).fill(0);
    const draws = 40_000;
    for (let index = 0; index < draws; index++) {
      const [tens, units] = drawStart(random, 2, 3, { first: 0.5, later: 0.5 });
      counts[tens! * 10 + units!]!++;
    }
    // A pattern is drawn with probability 1/8 among the patterns some number has.
    const expected = (number: number) => {
      const pattern = patternOf([Math.floor(number / 10), number % 10], 3);
      return 1 / byPattern.size / byPattern.get(pattern)!;
    };
    for (let number = 0; number < 100; number++) {
      const p = expected(number);
      const tolerance = 5 * Math.sqrt((p * (1 - p)) / draws);
      assert.ok(
        Math.abs(counts[number]! / draws - p) < tolerance,
        `${number}: ${counts[number]! / draws} vs ${p}`,
      );
    }
  });
});
