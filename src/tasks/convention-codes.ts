import type { RandomGenerator } from '../util/random.js';

/**
 * The two codes of the convention task and how its problems are drawn (convention.ts).
 *
 * A number of `digits` digits is written one symbol per digit, in one of two codes:
 *
 *     digit    0 1 2 3 4 5 6 7 8 9
 *     plain    0 1 2 3 4 5 6 7 8 9
 *     cipher   x y 5 8 3 6 9 4 7 2
 *
 * The cipher writes 0 and 1 as letters and permutes 2–9 among themselves (no digit is its own
 * symbol). A message that holds a 0 or a 1 is plain, one with an x or a y is the cipher, and a
 * message of only 2–9 reads both ways, to different numbers: it is *ambiguous*, and the reader
 * must bet on the code its writer uses. Which messages are ambiguous depends only on the number
 * (every digit ≥ 2), not on the code it is written in.
 */

export const codeNames = ['plain', 'cipher'] as const;
export type CodeName = (typeof codeNames)[number];

const symbolsOf: Readonly<Record<CodeName, string>> = {
  plain: '0123456789',
  cipher: 'xy58369472',
};

/** Every symbol a message can hold. */
export const messageSymbols = 'xy0123456789';

export function encode(digits: readonly number[], code: CodeName): string {
  return digits.map((digit) => symbolsOf[code][digit]!).join('');
}

/** The digits `text` spells in `code`, or null when it is not a `length`-symbol message of it. */
export function decode(text: string, code: CodeName, length: number): number[] | null {
  if (text.length !== length) return null;
  const digits: number[] = [];
  for (const symbol of text) {
    const digit = symbolsOf[code].indexOf(symbol);
    if (digit < 0) return null;
    digits.push(digit);
  }
  return digits;
}

/** The codes in which `text` is a well-formed message: none, one, or both (ambiguous). */
export function codesReading(text: string, length: number): CodeName[] {
  return codeNames.filter((code) => decode(text, code, length) !== null);
}

/** Digit-wise sum modulo 10 (no carries), the operation every agent applies. */
export function addKey(digits: readonly number[], key: number): number[] {
  return digits.map((digit) => (digit + key) % 10);
}

/** A message of this number is ambiguous: every digit is 2–9, so both codes read it. */
export function isAmbiguous(digits: readonly number[]): boolean {
  return digits.every((digit) => digit >= 2);
}

export interface ChainDraw {
  /** The start number, in plain digits. */
  start: number[];
  /** One key per agent position 0–7 (1–9 each): agent k adds keys[k] to every digit. */
  keys: number[];
}

export interface HandoffRates {
  /** Probability that agent A's message (the first handoff) is ambiguous. */
  first: number;
  /** The same for each later handoff. */
  later: number;
}

/**
 * Draws a start number and eight keys so that handoff k (the message agent k writes) is
 * ambiguous with probability `rates.first` for k = 0 and `rates.later` after.
 *
 * Adding a key rotates every digit by the same amount, so the chain's numbers are one pattern
 * rotated: its digits are drawn inside a window of six consecutive values (mod 10), which some
 * rotations put entirely in 2–9 (ambiguous; at least 3 rotations) and some do not (at least 2),
 * and each key
 * picks the next rotation among those of the wanted kind. Keys are never 0, so every agent
 * changes the number.
 */
export function drawChain(
  random: RandomGenerator,
  digits: number,
  positions: number,
  rates: HandoffRates,
): ChainDraw {
  const low = random.nextInt(10);
  const pattern = Array.from({ length: digits }, () => (low + random.nextInt(6)) % 10);
  const ambiguousAt = (rotation: number) => isAmbiguous(addKey(pattern, rotation));
  const rotations: number[] = [];
  for (let position = 0; position < positions; position++) {
    const previous = rotations.at(-1);
    const wanted = random.nextDouble() < (position === 0 ? rates.first : rates.later);
    const candidates = Array.from({ length: 10 }, (_, rotation) => rotation).filter(
      (rotation) => rotation !== previous && ambiguousAt(rotation) === wanted,
    );
    rotations.push(candidates[random.nextInt(candidates.length)]!);
  }
  const firstKey = 1 + random.nextInt(9);
  const start = addKey(pattern, (rotations[0]! - firstKey + 10) % 10);
  const keys = rotations.map((rotation, position) =>
    position === 0 ? firstKey : (rotation - rotations[position - 1]! + 10) % 10,
  );
  return { start, keys };
}

/** The number agent k writes: the start plus keys 0..k. */
export function chainValues(start: readonly number[], keys: readonly number[]): number[][] {
  const values: number[][] = [];
  let value = [...start];
  for (const key of keys) {
    value = addKey(value, key);
    values.push(value);
  }
  return values;
}
