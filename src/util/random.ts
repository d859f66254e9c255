import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseWithSchema } from './schema.js';

/**
 * The project's one seeded pseudo-random generator: xoshiro128** (Blackman & Vigna, 2018), a
 * fast 32-bit generator with 128 bits of state, period 2^128 − 1, that passes BigCrush.
 *
 * Seeds and derived streams go through SHA-256, so nearby seeds (0, 1, 2) and labels
 * ("agent-0", "agent-1") give unrelated streams. Every random choice in teamtr takes one of
 * these as an argument; `getState`/`setState` let a checkpoint resume a run bit for bit.
 */

/** A JSON-serializable snapshot of a generator; `setState` continues exactly where it was taken. */
export interface RandomState {
  algorithm: 'xoshiro128**';
  /** The four 32-bit state words (unsigned). */
  words: number[];
  /** The second normal deviate of the last Box–Muller pair, not yet returned. */
  spareNormal: number | null;
}

const uint32 = z.number().int().min(0).max(0xffffffff);

const randomStateSchema = z.strictObject({
  algorithm: z.literal('xoshiro128**'),
  words: z
    .array(uint32)
    .length(4)
    .refine((words) => words.some((word) => word !== 0), 'the state words must not all be zero'),
  spareNormal: z.number().nullable(),
});

export type RandomSeed = number | string;

export class RandomGenerator {
  private state: Uint32Array;
  private spareNormal: number | null = null;

  /** `seed`: a safe integer or a string; equal seeds give equal streams. */
  constructor(seed: RandomSeed) {
    if (typeof seed === 'number' && !Number.isSafeInteger(seed)) {
      throw new RangeError(`random seed must be a safe integer or a string, got ${seed}`);
    }
    this.state = stateFromDigest(`seed:${typeof seed}:${seed}`);
  }

  static fromState(state: RandomState): RandomGenerator {
    const generator = new RandomGenerator(0);
    generator.setState(state);
    return generator;
  }

  /** The next 32 random bits as an unsigned integer. */
  nextUint32(): number {
    const state = this.state;
    const result = Math.imul(rotateLeft(Math.imul(state[1], 5), 7), 9) >>> 0;
    const shifted = state[1] << 9;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= shifted;
    state[3] = rotateLeft(state[3], 11);
    return result;
  }

  /** Uniform in [0, 1) with 24 random bits (every value is an exact float32). */
  nextFloat(): number {
    return (this.nextUint32() >>> 8) * 2 ** -24;
  }

  /** Uniform in [0, 1) with 53 random bits (two draws). */
  nextDouble(): number {
    const high = this.nextUint32() >>> 5; // 27 bits
    const low = this.nextUint32() >>> 6; // 26 bits
    return (high * 2 ** 26 + low) * 2 ** -53;
  }

  /** Uniform integer in [0, maxExclusive), without modulo bias. `maxExclusive` ≤ 2^53. */
  nextInt(maxExclusive: number): number {
    if (!Number.isSafeInteger(maxExclusive) && maxExclusive !== 2 ** 53) {
      throw new RangeError(`nextInt needs an integer bound, got ${maxExclusive}`);
    }
    if (maxExclusive < 1)
      throw new RangeError(`nextInt needs a bound of at least 1, got ${maxExclusive}`);
    if (maxExclusive <= 2 ** 32) {
      // Reject the lowest (2^32 mod n) values so every residue is equally likely.
      const rejectBelow = 2 ** 32 % maxExclusive;
      for (;;) {
        const value = this.nextUint32();
        if (value >= rejectBelow) return value % maxExclusive;
      }
    }
    const rejectBelow = 2 ** 53 % maxExclusive;
    for (;;) {
      const value = this.nextDouble() * 2 ** 53;
      if (value >= rejectBelow) return value % maxExclusive;
    }
  }

  /** A standard normal deviate (Box–Muller; the pair's second value is kept for the next call). */
  normal(): number {
    if (this.spareNormal !== null) {
      const spare = this.spareNormal;
      this.spareNormal = null;
      return spare;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - this.nextDouble())); // 1 − u ∈ (0, 1]: no log(0)
    const angle = 2 * Math.PI * this.nextDouble();
    this.spareNormal = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }

  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<Item>(items: Item[]): Item[] {
    for (let index = items.length - 1; index > 0; index--) {
      const other = this.nextInt(index + 1);
      const item = items[index];
      items[index] = items[other];
      items[other] = item;
    }
    return items;
  }

  /** One element of a non-empty array, uniformly. */
  choice<Item>(items: readonly Item[]): Item {
    if (items.length === 0) throw new RangeError('choice needs a non-empty array');
    return items[this.nextInt(items.length)];
  }

  /**
   * A new independent generator seeded from this one's next 128 bits; this one advances, so
   * successive forks differ.
   */
  fork(): RandomGenerator {
    const words = [this.nextUint32(), this.nextUint32(), this.nextUint32(), this.nextUint32()];
    return this.derived(`fork:${words.join(',')}`);
  }

  /**
   * A generator derived from this one's current state and `label`, without advancing this one:
   * `split("agent-1")` is the same stream whatever else was split off before it.
   */
  split(label: string): RandomGenerator {
    return this.derived(`split:${this.state.join(',')}:${this.spareNormal}:${label}`);
  }

  getState(): RandomState {
    return { algorithm: 'xoshiro128**', words: [...this.state], spareNormal: this.spareNormal };
  }

  /** Restores a state from `getState` (validated: a corrupt state is a ConfigError). */
  setState(state: RandomState, source = 'random state'): void {
    const parsed = parseWithSchema(randomStateSchema, state, source);
    this.state = Uint32Array.from(parsed.words);
    this.spareNormal = parsed.spareNormal;
  }

  private derived(material: string): RandomGenerator {
    const generator = new RandomGenerator(0);
    generator.state = stateFromDigest(material);
    return generator;
  }
}

function rotateLeft(value: number, bits: number): number {
  return (value << bits) | (value >>> (32 - bits));
}

function stateFromDigest(material: string): Uint32Array {
  const digest = createHash('sha256').update(material).digest();
  const state = new Uint32Array(4);
  for (let index = 0; index < 4; index++) state[index] = digest.readUInt32LE(index * 4);
  if (state.every((word) => word === 0)) state[0] = 1; // the one state xoshiro must avoid
  return state;
}
