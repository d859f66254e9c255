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

/** What every agent adds to every digit, modulo 10 (no carries). */
export const stepSize = 3;

/** The operation every agent applies: each digit plus `stepSize`, modulo 10. */
export function step(digits: readonly number[]): number[] {
  return digits.map((digit) => (digit + stepSize) % 10);
}

/** A message of this number is ambiguous: every digit is 2–9, so both codes read it. */
export function isAmbiguous(digits: readonly number[]): boolean {
  return digits.every((digit) => digit >= 2);
}

export interface HandoffRates {
  /** Probability that agent A's message (the first handoff) is ambiguous. */
  first: number;
  /** The same for each later handoff. */
  later: number;
}

/** For each start digit, the handoffs at which that digit is 0 or 1 (a bit mask). */
function badHandoffs(handoffs: number): number[] {
  return Array.from({ length: 10 }, (_, start) => {
    let mask = 0;
    for (let handoff = 0; handoff < handoffs; handoff++)
      if ((start + (handoff + 1) * stepSize) % 10 < 2) mask |= 1 << handoff;
    return mask;
  });
}

const bitCount = (mask: number) => mask.toString(2).replaceAll('0', '').length;

/**
 * How many sequences of `length` digits, each with a mask inside `target`, together with
 * `covered` make the masks' union exactly `target` (inclusion–exclusion over target's subsets).
 */
function completions(masks: readonly number[], covered: number, target: number, length: number) {
  let total = 0;
  for (let subset = target; ; subset = (subset - 1) & target) {
    if ((covered & ~subset) === 0) {
      const within = masks.filter((mask) => (mask & ~subset) === 0).length;
      total += (bitCount(target & ~subset) % 2 ? -1 : 1) * within ** length;
    }
    if (subset === 0) return total;
  }
}

/**
 * Draws a start number whose chain has handoff k (the message agent k writes, k = 0 …
 * handoffs − 1) ambiguous with probability about `rates.first` for k = 0 and `rates.later`
 * after. A handoff is ambiguous when no digit is then 0 or 1, so the pattern of ambiguous
 * handoffs is drawn first, then the number uniformly among those with that pattern, digit by
 * digit, each weighted by how many ways the rest can complete it. Some patterns have no
 * number (with a step of 3 every digit is 0 or 1 at one of any seven handoffs in a row): they
 * are redrawn, which moves the rates a little (measured in the tests).
 */
export function drawStart(
  random: RandomGenerator,
  digits: number,
  handoffs: number,
  rates: HandoffRates,
): number[] {
  const masks = badHandoffs(handoffs);
  for (;;) {
    let unambiguous = 0;
    for (let handoff = 0; handoff < handoffs; handoff++)
      if (random.nextDouble() >= (handoff === 0 ? rates.first : rates.later))
        unambiguous |= 1 << handoff;
    if (completions(masks, 0, unambiguous, digits) === 0) continue;
    const start: number[] = [];
    let covered = 0;
    for (let position = 0; position < digits; position++) {
      const weights = masks.map((mask) =>
        (mask & ~unambiguous) === 0
          ? completions(masks, covered | mask, unambiguous, digits - position - 1)
          : 0,
      );
      let pick = random.nextInt(weights.reduce((sum, weight) => sum + weight, 0));
      const digit = weights.findIndex((weight) => (pick -= weight) < 0);
      start.push(digit);
      covered |= masks[digit]!;
    }
    return start;
  }
}

/** The numbers agents 0 … count − 1 write: the start after 1, 2, … steps. */
export function chainValues(start: readonly number[], count: number): number[][] {
  const values: number[][] = [];
  let value = [...start];
  for (let agent = 0; agent < count; agent++) {
    value = step(value);
    values.push(value);
  }
  return values;
}
