import { RandomGenerator } from '../util/random.js';

/**
 * Seeded randomness for the exact-theory experiment. Every random choice in src/theory takes
 * one of these, so the same seed gives the same games, bit for bit.
 */
export interface SeededRandom {
  /** Uniform in [0, 1) with 53 random bits. */
  nextFloat(): number;
  /** Standard normal (Box–Muller on two uniforms). */
  nextNormal(): number;
  /** Uniform integer in [0, bound); `bound` must be a positive integer below 2^32. */
  nextInteger(bound: number): number;
}

/**
 * Hashes any number of integers into one 32-bit seed (murmur3's finalizer applied after each
 * part), so sub-streams can be derived from (run seed, N, game index) independently of the order
 * in which they are used.
 */
export function deriveSeed(...parts: number[]): number {
  let hash = 0x9e3779b9;
  for (const part of parts) {
    hash = avalanche((hash ^ Math.imul(part | 0, 0x85ebca6b) ^ ((part / 2 ** 32) | 0)) >>> 0);
    hash = avalanche((hash + 0x6a09e667) >>> 0);
  }
  return hash >>> 0;
}

/** A 32-bit seed part from a name (FNV-1a over UTF-16 code units), for `deriveSeed`. */
export function seedPartFromText(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193) >>> 0;
  }
  return hash;
}

function avalanche(value: number): number {
  let mixed = value;
  mixed ^= mixed >>> 16;
  mixed = Math.imul(mixed, 0x85ebca6b);
  mixed ^= mixed >>> 13;
  mixed = Math.imul(mixed, 0xc2b2ae35);
  mixed ^= mixed >>> 16;
  return mixed >>> 0;
}

/**
 * A generator whose whole stream is a function of `seed` (any integer): the project's
 * RandomGenerator (src/util/random.ts) behind the small interface the theory code uses.
 */
export function createSeededRandom(seed: number): SeededRandom {
  const generator = new RandomGenerator(`theory/${seed}`);
  return {
    nextFloat: () => generator.nextDouble(),
    nextNormal: () => generator.normal(),
    nextInteger: (bound: number) => generator.nextInt(bound),
  };
}
