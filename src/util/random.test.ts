import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from './errors.js';
import { RandomGenerator, type RandomState } from './random.js';

/** An independent xoshiro128** in BigInt arithmetic, to check the Number/imul implementation. */
function* referenceXoshiro(seedWords: bigint[]): Generator<number> {
  const mask = 0xffffffffn;
  const rotateLeft = (value: bigint, bits: bigint) =>
    ((value << bits) | (value >> (32n - bits))) & mask;
  const state = [...seedWords];
  for (;;) {
    const result = (rotateLeft((state[1] * 5n) & mask, 7n) * 9n) & mask;
    const shifted = (state[1] << 9n) & mask;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= shifted;
    state[3] = rotateLeft(state[3], 11n);
    yield Number(result);
  }
}

function generatorWithWords(words: number[]): RandomGenerator {
  return RandomGenerator.fromState({ algorithm: 'xoshiro128**', words, spareNormal: null });
}

describe('RandomGenerator', () => {
  test('xoshiro128** core: hand-computed first outputs from state [1, 2, 3, 4]', () => {
    // s1 = 2: rotl(2·5, 7)·9 = 11520; then s1 = 0 → 0; then s1 = 1029 → rotl(5145, 7)·9 = 5927040.
    const random = generatorWithWords([1, 2, 3, 4]);
    assert.deepEqual(
      [random.nextUint32(), random.nextUint32(), random.nextUint32()],
      [11520, 0, 5927040],
    );
  });

  test('xoshiro128** core matches an independent BigInt implementation for 2000 steps', () => {
    const words = [0x9e3779b9, 0x7f4a7c15, 0xf39cc060, 0x5ced8a72];
    const random = generatorWithWords(words);
    const reference = referenceXoshiro(words.map(BigInt));
    for (let step = 0; step < 2000; step++) {
      assert.equal(random.nextUint32(), reference.next().value, `step ${step}`);
    }
  });

  test('the same seed gives the same stream; different seeds differ', () => {
    const draw = (seed: number | string) => {
      const random = new RandomGenerator(seed);
      return Array.from({ length: 8 }, () => random.nextUint32());
    };
    assert.deepEqual(draw(42), draw(42));
    assert.deepEqual(draw('run-a'), draw('run-a'));
    assert.notDeepEqual(draw(42), draw(43));
    assert.notDeepEqual(draw(1), draw('1'));
  });

  test('rejects seeds that are not safe integers', () => {
    assert.throws(() => new RandomGenerator(1.5), RangeError);
    assert.throws(() => new RandomGenerator(2 ** 60), RangeError);
  });

  test('getState/setState resume the exact stream, including a pending normal deviate', () => {
    const random = new RandomGenerator(7);
    for (let index = 0; index < 5; index++) random.nextUint32();
    random.normal(); // leaves the pair's second value pending
    const saved = JSON.parse(JSON.stringify(random.getState())) as RandomState;
    assert.notEqual(saved.spareNormal, null);
    const expected = [random.normal(), random.nextUint32(), random.nextDouble(), random.normal()];
    const resumed = RandomGenerator.fromState(saved);
    assert.deepEqual(
      [resumed.normal(), resumed.nextUint32(), resumed.nextDouble(), resumed.normal()],
      expected,
    );
  });

  test('setState rejects a corrupt state with a ConfigError naming the field', () => {
    const random = new RandomGenerator(1);
    const bad = (state: unknown) => () =>
      random.setState(state as RandomState, 'extra.json random');
    assert.throws(
      bad({ algorithm: 'mt19937', words: [1, 2, 3, 4], spareNormal: null }),
      ConfigError,
    );
    assert.throws(bad({ algorithm: 'xoshiro128**', words: [1, 2, 3], spareNormal: null }), /words/);
    assert.throws(
      bad({ algorithm: 'xoshiro128**', words: [0, 0, 0, 0], spareNormal: null }),
      /all be zero/,
    );
    assert.throws(
      bad({ algorithm: 'xoshiro128**', words: [1, 2, 3, -4], spareNormal: null }),
      /words\[3\]/,
    );
  });

  test('nextFloat and nextDouble lie in [0, 1) with the promised resolution', () => {
    const random = new RandomGenerator(3);
    let oddLowBit = 0;
    for (let index = 0; index < 10000; index++) {
      const single = random.nextFloat();
      assert.ok(single >= 0 && single < 1);
      assert.equal(Math.fround(single), single);
      const double = random.nextDouble();
      assert.ok(double >= 0 && double < 1);
      const scaled = double * 2 ** 53;
      assert.ok(Number.isInteger(scaled));
      if (scaled % 2 === 1) oddLowBit++;
    }
    // With 53 random bits the lowest bit is set about half the time (24-bit floats: never).
    assert.ok(oddLowBit > 4500 && oddLowBit < 5500, `odd low bit ${oddLowBit} times`);
  });

  test('nextInt is roughly uniform (chi-square over 10 buckets)', () => {
    const random = new RandomGenerator(11);
    const counts = new Array<number>(10).fill(0);
    const draws = 100000;
    for (let index = 0; index < draws; index++) counts[random.nextInt(10)]++;
    const expected = draws / 10;
    const chiSquare = counts.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
    assert.ok(chiSquare < 27.88, `chi-square ${chiSquare} above the 0.1% critical value for 9 dof`);
  });

  test('nextInt has no modulo bias for a bound near 2^32', () => {
    // With bound 3·2^30, plain `x % bound` would return values below 2^30 half the time
    // instead of a third.
    const random = new RandomGenerator(5);
    const bound = 3 * 2 ** 30;
    let low = 0;
    const draws = 30000;
    for (let index = 0; index < draws; index++) {
      const value = random.nextInt(bound);
      assert.ok(Number.isInteger(value) && value >= 0 && value < bound);
      if (value < 2 ** 30) low++;
    }
    assert.ok(Math.abs(low / draws - 1 / 3) < 0.02, `fraction below 2^30: ${low / draws}`);
  });

  test('nextInt handles bounds above 2^32 and rejects bad bounds', () => {
    const random = new RandomGenerator(9);
    const bound = 2 ** 40 + 3;
    for (let index = 0; index < 1000; index++) {
      const value = random.nextInt(bound);
      assert.ok(Number.isInteger(value) && value >= 0 && value < bound);
    }
    assert.equal(random.nextInt(1), 0);
    assert.throws(() => random.nextInt(0), RangeError);
    assert.throws(() => random.nextInt(2.5), RangeError);
  });

  test('normal() has mean 0 and variance 1', () => {
    const random = new RandomGenerator(13);
    const count = 100000;
    let sum = 0;
    let sumOfSquares = 0;
    for (let index = 0; index < count; index++) {
      const value = random.normal();
      assert.ok(Number.isFinite(value));
      sum += value;
      sumOfSquares += value * value;
    }
    const mean = sum / count;
    const variance = sumOfSquares / count - mean * mean;
    assert.ok(Math.abs(mean) < 0.015, `mean ${mean}`);
    assert.ok(Math.abs(variance - 1) < 0.02, `variance ${variance}`);
  });

  test('shuffle permutes in place, deterministically, and reaches every permutation of 3', () => {
    const items = Array.from({ length: 50 }, (_, index) => index);
    const shuffled = new RandomGenerator(17).shuffle([...items]);
    assert.deepEqual(
      [...shuffled].sort((left, right) => left - right),
      items,
    );
    assert.notDeepEqual(shuffled, items);
    assert.deepEqual(new RandomGenerator(17).shuffle([...items]), shuffled);

    const random = new RandomGenerator(19);
    const seen = new Map<string, number>();
    for (let index = 0; index < 6000; index++) {
      const key = random.shuffle(['a', 'b', 'c']).join('');
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    assert.equal(seen.size, 6);
    for (const [key, count] of seen) assert.ok(count > 850 && count < 1150, `${key}: ${count}`);
  });

  test('fork advances the parent and yields distinct, uncorrelated streams', () => {
    const parent = new RandomGenerator(23);
    const before = parent.getState();
    const first = parent.fork();
    assert.notDeepEqual(parent.getState(), before);
    const second = parent.fork();
    const streams = [parent, first, second].map((random) =>
      Array.from({ length: 2000 }, () => random.nextDouble() - 0.5),
    );
    for (const [left, right] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ]) {
      assert.notDeepEqual(streams[left].slice(0, 4), streams[right].slice(0, 4));
      const correlation =
        streams[left].reduce((sum, value, index) => sum + value * streams[right][index], 0) / 2000;
      // Independent uniforms on [-0.5, 0.5]: covariance 0, standard error ≈ 0.083 / √2000 ≈ 0.0019.
      assert.ok(Math.abs(correlation) < 0.01, `streams ${left} and ${right}: ${correlation}`);
    }
  });

  test('split depends only on the current state and the label, and does not advance', () => {
    const random = new RandomGenerator(29);
    const before = random.getState();
    const agentOne = random.split('agent-1').nextUint32();
    random.split('agent-0');
    assert.equal(random.split('agent-1').nextUint32(), agentOne);
    assert.deepEqual(random.getState(), before);
    assert.notEqual(random.split('agent-0').nextUint32(), agentOne);
    random.nextUint32();
    assert.notEqual(random.split('agent-1').nextUint32(), agentOne);
  });

  test('choice picks from the array and refuses an empty one', () => {
    const random = new RandomGenerator(31);
    const picked = new Set(Array.from({ length: 200 }, () => random.choice(['x', 'y', 'z'])));
    assert.deepEqual([...picked].sort(), ['x', 'y', 'z']);
    assert.throws(() => random.choice([]), RangeError);
  });
});
