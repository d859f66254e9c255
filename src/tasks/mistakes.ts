import type { RandomGenerator } from '../util/random.js';

/**
 * Plausible slips of a small model, shared by the built-in tasks' `corrupt`. Each returns a
 * value different from its input, deterministically given the generator.
 */

/** Off by one or ten, two digits swapped, a digit dropped or doubled. Never equal to `value`. */
export function numericMistake(value: number, random: RandomGenerator): number {
  const text = String(Math.abs(value));
  const sign = value < 0 ? -1 : 1;
  const candidates: number[] = [value + 1, value - 1, value + 10, value - 10];
  for (let index = 0; index + 1 < text.length; index++) {
    if (text[index] !== text[index + 1]) {
      const swapped = text.slice(0, index) + text[index + 1] + text[index] + text.slice(index + 2);
      candidates.push(sign * Number(swapped));
    }
  }
  if (text.length > 1) candidates.push(sign * Number(text.slice(0, -1)));
  candidates.push(sign * Number(text + text.at(-1)));
  const plausible = candidates.filter(
    (candidate) => candidate !== value && (value < 0 || candidate >= 0),
  );
  return plausible[random.nextInt(plausible.length)]!;
}

/**
 * Two neighbours swapped, a character dropped, doubled or replaced by another of `letters`.
 * Never equal to `text`; an empty text gains one letter.
 */
export function stringMistake(text: string, letters: string, random: RandomGenerator): string {
  const candidates = new Set<string>();
  for (let index = 0; index < text.length; index++) {
    const before = text.slice(0, index);
    const after = text.slice(index + 1);
    candidates.add(before + after);
    candidates.add(before + text[index] + text[index] + after);
    if (index + 1 < text.length)
      candidates.add(before + text[index + 1] + text[index] + text.slice(index + 2));
    const replacement = letters[random.nextInt(letters.length)]!;
    candidates.add(before + replacement + after);
  }
  candidates.add(text + letters[random.nextInt(letters.length)]!);
  candidates.delete(text);
  const choices = [...candidates];
  return choices[random.nextInt(choices.length)]!;
}
