import { ConfigError } from '../../util/errors.js';
import type { VerifyResult } from '../types.js';

/**
 * Multiple choice: finds the chosen letter in free text. In order of trust, the last match of:
 * 1. an answer phrase: "Answer: B", "answer is (b)", "the answer is b", "Final answer - C";
 * 2. a letter in parentheses: "(B)";
 * 3. a capital letter followed by "." or ")" at the start of a word: "B.", "B)";
 * 4. the whole text being one letter, in either case: "b", " B ".
 * A lone capital elsewhere in running text is not read as a choice ("A cat sat" is no answer).
 */

export interface ChoiceOptions {
  /** The valid letters, in upper case. @default 'ABCDE' */
  letters?: string;
}

export function extractChoice(text: string, options: ChoiceOptions = {}): string | null {
  const letters = normalizeLetters(options.letters ?? 'ABCDE');
  const set = `[${letters}${letters.toLowerCase()}]`;
  const upperSet = `[${letters}]`;
  const patterns = [
    new RegExp(
      String.raw`answer\s*(?:is|:|-|=)?\s*(?:option\s*)?[:\-]?\s*\(?(${set})\)?(?![A-Za-z])`,
      'gi',
    ),
    new RegExp(String.raw`\((${set})\)`, 'g'),
    new RegExp(String.raw`(?<![A-Za-z0-9])(${upperSet})[.)](?![A-Za-z0-9])`, 'g'),
    new RegExp(String.raw`^\s*\(?(${set})\)?\.?\s*$`, 'g'),
  ];
  for (const pattern of patterns) {
    const matches = [...text.matchAll(pattern)].filter((match) => !looksLikeArticle(text, match));
    const last = matches.at(-1);
    if (last) return last[1]!.toUpperCase();
  }
  return null;
}

/** "the answer is a bit off": a bare lower-case letter followed by a lower-case word is prose. */
function looksLikeArticle(text: string, match: RegExpMatchArray): boolean {
  const letter = match[1]!;
  if (letter !== letter.toLowerCase() || match[0].includes('(')) return false;
  const after = text.slice(match.index! + match[0].length);
  return /^\s+[a-z]/.test(after);
}

function normalizeLetters(letters: string): string {
  const upper = letters.toUpperCase();
  if (!/^[A-Z]+$/.test(upper)) {
    throw new ConfigError('letters', `choice letters must be A–Z, got "${letters}"`);
  }
  return upper;
}

/** The reference answer may itself be written "(B)", "B." or "b"; it is read the same way. */
export function verifyChoice(
  expected: string,
  text: string,
  options: ChoiceOptions = {},
): VerifyResult {
  const expectedLetter = extractChoice(expected, options) ?? expected.trim().toUpperCase();
  const extracted = extractChoice(text, options);
  const correct = extracted !== null && extracted === expectedLetter;
  return {
    reward: correct ? 1 : 0,
    correct,
    details: {
      verifier: 'choice',
      extracted,
      expected: expectedLetter,
      explanation:
        extracted === null
          ? `no choice among ${options.letters ?? 'ABCDE'} found`
          : `chose ${extracted}, expected ${expectedLetter}`,
    },
  };
}
