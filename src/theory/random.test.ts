import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSeededRandom, deriveSeed, seedPartFromText } from './random.js';

test('the same seed gives the same stream and different seeds differ', () => {
  const first = createSeededRandom(42);
  const second = createSeededRandom(42);
  const other = createSeededRandom(43);
  const draws = Array.from({ length: 20 }, () => first.nextFloat());
  assert.deepEqual(
    draws,
    Array.from({ length: 20 }, () => second.nextFloat()),
  );
  assert.notDeepEqual(
    draws,
    Array.from({ length: 20 }, () => other.nextFloat()),
  );
});

test('uniform draws stay in [0, 1) with mean 1/2 and integers cover their range', () => {
  const random = createSeededRandom(7);
  let total = 0;
  const counts = new Array<number>(5).fill(0);
  const samples = 50_000;
  for (let sample = 0; sample < samples; sample++) {
    const value = random.nextFloat();
    assert.ok(value >= 0 && value < 1);
    total += value;
    counts[random.nextInteger(5)]!++;
  }
  // Standard error of the mean of U(0,1) is 0.2887/√n ≈ 0.0013; allow five of them.
  assert.ok(Math.abs(total / samples - 0.5) < 0.0065);
  for (const count of counts) assert.ok(Math.abs(count / samples - 0.2) < 0.01);
  assert.throws(() => random.nextInteger(0), RangeError);
  assert.throws(() => random.nextInteger(2.5), RangeError);
});

test('normal draws have mean 0 and variance 1', () => {
  const random = createSeededRandom(11);
  const samples = 50_000;
  let total = 0;
  let squares = 0;
  for (let sample = 0; sample < samples; sample++) {
    const value = random.nextNormal();
    total += value;
    squares += value * value;
  }
  assert.ok(Math.abs(total / samples) < 0.025);
  assert.ok(Math.abs(squares / samples - 1) < 0.035);
});

test('derived seeds depend on every part and on their order', () => {
  const base = deriveSeed(1, 2, 3);
  assert.equal(base, deriveSeed(1, 2, 3));
  assert.notEqual(base, deriveSeed(1, 3, 2));
  assert.notEqual(base, deriveSeed(1, 2, 4));
  assert.notEqual(deriveSeed(0), deriveSeed(2 ** 32));
  assert.notEqual(seedPartFromText('random'), seedPartFromText('dense'));
});
