import type { VerifyResult } from '../types.js';
import { numbersClose, parseNumber, type Tolerance } from './numeric.js';

/**
 * Math answers: the last `\boxed{…}` (balanced braces, so `\boxed{\frac{1}{2}}` yields
 * `\frac{1}{2}`), else the last "Answer: …" line, else (by default) the whole text. Both sides are
 * normalized (dollar signs, `\left`/`\right`, spacing commands, `\dfrac`, `\text{…}`, degree
 * marks, whitespace, a trailing period) and compared as numbers when both parse, else as strings.
 */

export interface MathOptions extends Tolerance {
  /**
   * What to compare when the text has neither `\boxed{…}` nor an "Answer:" line.
   * @default 'whole-text'
   */
  fallback?: 'whole-text' | 'none';
}

/** The contents of the last `\boxed{…}` (or `\fbox{…}`) whose braces balance, else null. */
export function extractBoxed(text: string): string | null {
  const starts = [...text.matchAll(/\\(?:boxed|fbox)\s*\{/g)];
  for (let index = starts.length - 1; index >= 0; index--) {
    const match = starts[index]!;
    const contentStart = match.index + match[0].length;
    const contentEnd = matchingBrace(text, contentStart);
    if (contentEnd !== null) return text.slice(contentStart, contentEnd);
  }
  return null;
}

/** Index of the "}" closing a group whose contents start at `start`, or null if none does. */
function matchingBrace(text: string, start: number): number | null {
  let depth = 1;
  for (let position = start; position < text.length; position++) {
    const character = text[position];
    if (character === '\\') {
      position++; // an escaped brace "\{" does not open or close a group
    } else if (character === '{') {
      depth++;
    } else if (character === '}') {
      depth--;
      if (depth === 0) return position;
    }
  }
  return null;
}

/** The text after the last "Answer:" (or "Final answer:"), to the end of its line, else null. */
export function extractAnswerLine(text: string): string | null {
  const matches = [
    ...text.matchAll(/(?:^|\n)[ \t*#_]*(?:final\s+)?answer[\s*_]*[:：][ \t*_]*(.*)/gi),
  ];
  const last = matches.at(-1);
  if (!last) return null;
  const answer = last[1]!
    .trim()
    .replace(/[*_]+$/, '')
    .trim();
  return answer.length > 0 ? answer : null;
}

/** GSM8K's convention: the text after the last "####", to the end of its line, else null. */
export function extractHashMarked(text: string): string | null {
  const at = text.lastIndexOf('####');
  if (at < 0) return null;
  const answer = text
    .slice(at + 4)
    .split('\n')[0]!
    .trim();
  return answer.length > 0 ? answer : null;
}

/** Removes presentation-only LaTeX so equal answers written differently compare equal. */
export function normalizeMathAnswer(answer: string): string {
  let normalized = answer;
  normalized = normalized.replace(/\\text\s*\{([^{}]*)\}/g, '$1');
  normalized = normalized.replace(/\\(?:d|t)frac/g, '\\frac');
  normalized = normalized.replace(/\^\s*\{?\s*\\circ\s*\}?/g, '');
  normalized = normalized.replace(/\\(?:left|right|displaystyle)(?![a-zA-Z])/g, '');
  normalized = normalized.replace(/\\[,;:! ]/g, '');
  normalized = normalized.replace(/\$/g, '');
  normalized = normalized.replace(/\s+/g, '');
  normalized = normalized.replace(/\.$/, '');
  while (/^\{.*\}$/.test(normalized) && matchingBrace(normalized, 1) === normalized.length - 1) {
    normalized = normalized.slice(1, -1);
  }
  return normalized;
}

/** Parses a normalized answer as a number: plain numbers, a/b, \frac{a}{b}, \frac12, signs. */
export function parseMathNumber(normalized: string): number | null {
  const plain = parseNumber(normalized);
  if (plain !== null) return plain;
  const fraction = /^([-+]?)\\frac(?:\{([^{}]+)\}\{([^{}]+)\}|(\d)(\d))$/.exec(normalized);
  if (!fraction) return null;
  const numerator = parseNumber(fraction[2] ?? fraction[4]!);
  const denominator = parseNumber(fraction[3] ?? fraction[5]!);
  if (numerator === null || denominator === null || denominator === 0) return null;
  const value = numerator / denominator;
  return fraction[1] === '-' ? -value : value;
}

export function verifyMath(
  expected: string,
  text: string,
  options: MathOptions = {},
): VerifyResult {
  const found = locateAnswer(text, options.fallback ?? 'whole-text');
  const expectedAnswer = normalizeMathAnswer(extractBoxed(expected) ?? expected);
  if (found === null) {
    return {
      reward: 0,
      correct: false,
      details: {
        verifier: 'math',
        extracted: null,
        expected: expectedAnswer,
        explanation: 'no \\boxed{...} and no "Answer:" line in the text',
      },
    };
  }
  const extracted = normalizeMathAnswer(found.answer);
  const extractedValue = parseMathNumber(extracted);
  const expectedValue = parseMathNumber(expectedAnswer);
  const bothNumbers = extractedValue !== null && expectedValue !== null;
  const correct = bothNumbers
    ? numbersClose(extractedValue, expectedValue, options)
    : extracted === expectedAnswer;
  const comparison = bothNumbers
    ? `compared as numbers: ${extractedValue} vs ${expectedValue}`
    : 'compared as normalized strings';
  return {
    reward: correct ? 1 : 0,
    correct,
    details: {
      verifier: 'math',
      extracted,
      expected: expectedAnswer,
      explanation: `${found.source}; ${comparison}; ${correct ? 'correct' : 'incorrect'}`,
    },
  };
}

function locateAnswer(
  text: string,
  fallback: 'whole-text' | 'none',
): { answer: string; source: string } | null {
  const boxed = extractBoxed(text);
  if (boxed !== null) return { answer: boxed, source: 'last \\boxed{...}' };
  const line = extractAnswerLine(text);
  if (line !== null) return { answer: line, source: 'last "Answer:" line' };
  const marked = extractHashMarked(text);
  if (marked !== null) return { answer: marked, source: 'text after the last "####"' };
  if (fallback === 'whole-text' && text.trim().length > 0) {
    return { answer: text, source: 'whole text (no \\boxed or "Answer:")' };
  }
  return null;
}
