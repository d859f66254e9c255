import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TeamtrError } from '../util/errors.js';
import { generateSplit, hashString, splitOf } from './splits.js';

describe('hashString', () => {
  it('is a fixed function of the text', () => {
    assert.equal(hashString('7+5|-3|+8'), hashString('7+5|-3|+8'));
    assert.notEqual(hashString('7+5|-3|+8'), hashString('7+5|-3|+9'));
    assert.ok(Number.isInteger(hashString('')) && hashString('') >= 0);
  });
  it('spreads short similar keys evenly enough for an eval share', () => {
    const keys = Array.from({ length: 10_000 }, (_, index) => `${index % 100}+${index}`);
    const share = keys.filter((key) => splitOf(key, 0.2) === 'eval').length / keys.length;
    assert.ok(Math.abs(share - 0.2) < 0.02, `eval share ${share}`);
  });
});

describe('splitOf', () => {
  it('only moves keys from train to eval when the eval fraction grows', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (key, first, second) => {
          const [low, high] = first < second ? [first, second] : [second, first];
          return !(splitOf(key, low) === 'eval' && splitOf(key, high) === 'train');
        },
      ),
    );
  });
  it('puts everything in train at fraction 0 and in eval at fraction 1', () => {
    fc.assert(
      fc.property(fc.string(), (key) => splitOf(key, 0) === 'train' && splitOf(key, 1) === 'eval'),
    );
  });
});

describe('generateSplit', () => {
  const counter = (limit: number) => (random: { nextInt(max: number): number }) => {
    const value = random.nextInt(limit);
    return { prompt: `p${value}`, answer: String(value) };
  };
  it('keeps only candidates of the requested split and numbers the ids', () => {
    const problems = generateSplit({
      taskName: 'test',
      split: 'eval',
      seed: 3,
      count: 20,
      evalFraction: 0.3,
      generate: counter(1000),
    });
    assert.equal(problems.length, 20);
    assert.ok(problems.every((problem) => splitOf(problem.prompt, 0.3) === 'eval'));
    assert.deepEqual(
      problems.map((problem) => problem.id),
      Array.from({ length: 20 }, (_, index) => `eval-3-${index}`),
    );
  });
  it('allows repeats in train by default and refuses them when asked', () => {
    const options = {
      taskName: 'tiny',
      split: 'train' as const,
      seed: 1,
      count: 50,
      evalFraction: 0.2,
      generate: counter(10),
    };
    assert.equal(generateSplit(options).length, 50);
    assert.throws(
      () => generateSplit({ ...options, unique: true }),
      (error: unknown) =>
        error instanceof TeamtrError &&
        /tiny: found only \d+ distinct train problems of the 50 asked for/.test(error.message),
    );
  });
  it('needs a count', () => {
    assert.throws(
      () =>
        generateSplit({
          taskName: 'test',
          split: 'train',
          seed: 1,
          count: undefined,
          evalFraction: 0.2,
          generate: counter(10),
        }),
      /need a count/,
    );
  });
});
