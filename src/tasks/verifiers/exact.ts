import type { VerifyResult } from '../types.js';

export interface ExactOptions {
  /** Ignore leading and trailing whitespace. @default true */
  trim?: boolean;
  /** @default true */
  caseSensitive?: boolean;
  /** Treat every run of whitespace as one space. @default false */
  collapseWhitespace?: boolean;
}

export function normalizeText(text: string, options: ExactOptions = {}): string {
  let normalized = text;
  if (options.collapseWhitespace ?? false) normalized = normalized.replace(/\s+/g, ' ');
  if (options.trim ?? true) normalized = normalized.trim();
  if (!(options.caseSensitive ?? true)) normalized = normalized.toLowerCase();
  return normalized;
}

/** Reward 1 when the normalized text equals the normalized reference answer. */
export function verifyExact(
  expected: string,
  text: string,
  options: ExactOptions = {},
): VerifyResult {
  const extracted = normalizeText(text, options);
  const normalizedExpected = normalizeText(expected, options);
  const correct = extracted === normalizedExpected;
  const applied = [
    (options.trim ?? true) && 'trimmed',
    !(options.caseSensitive ?? true) && 'case-folded',
    (options.collapseWhitespace ?? false) && 'whitespace collapsed',
  ].filter(Boolean);
  return {
    reward: correct ? 1 : 0,
    correct,
    details: {
      verifier: 'exact',
      extracted,
      expected: normalizedExpected,
      explanation: `${correct ? 'equal' : 'not equal'}${applied.length ? ` (${applied.join(', ')})` : ''}`,
    },
  };
}
