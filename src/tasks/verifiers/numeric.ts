import type { VerifyResult } from '../types.js';

/**
 * Number parsing and tolerant comparison. Accepted forms: integers and decimals with an
 * optional sign ("-12", "+3.5", ".5", "−4" with a Unicode minus), thousands separators in
 * groups of three ("1,000", "-1,234.5"), fractions of integers ("3/4", "-7 / 2") and scientific
 * notation ("1e3", "2.5E-4").
 */

const unsignedNumberSource = String.raw`(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\s*\/\s*\d+|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?`;
const signSource = '[-+\u2212]';

const wholeNumberPattern = new RegExp(`^(${signSource})?(${unsignedNumberSource})$`);
/**
 * A number inside running text. A sign counts only when nothing word-like stands right before it,
 * so "7-3" yields 7 and 3 (not −3) while "x = -3" yields −3; digits glued to letters or to a
 * decimal point are not split off ("x2", "1.2.3" → no stray numbers beyond "1.2").
 */
const numberInTextPattern = new RegExp(
  String.raw`(?<![\w.)\]}])(${signSource})?(?<![\w.])(${unsignedNumberSource})(?![\w])`,
  'g',
);

/** Parses text that is exactly one number (surrounding whitespace allowed), else null. */
export function parseNumber(text: string): number | null {
  const match = wholeNumberPattern.exec(text.trim());
  if (!match) return null;
  return valueOf(match[1], match[2]!);
}

/** Every number in running text, in order, with the exact text it came from. */
export function findNumbers(text: string): { text: string; value: number }[] {
  const found: { text: string; value: number }[] = [];
  for (const match of text.matchAll(numberInTextPattern)) {
    const value = valueOf(match[1], match[2]!);
    if (value !== null) found.push({ text: match[0], value });
  }
  return found;
}

function valueOf(sign: string | undefined, body: string): number | null {
  const negative = sign === '-' || sign === '\u2212';
  let magnitude: number;
  if (body.includes('/')) {
    const [numeratorText, denominatorText] = body.split('/');
    const denominator = Number(denominatorText!.trim());
    if (denominator === 0) return null;
    magnitude = Number(numeratorText!.trim()) / denominator;
  } else {
    magnitude = Number(body.replaceAll(',', ''));
  }
  if (!Number.isFinite(magnitude)) return null;
  return negative ? -magnitude : magnitude;
}

export interface Tolerance {
  /** @default 1e-9 */
  absoluteTolerance?: number;
  /** Relative to the larger magnitude of the two. @default 1e-9 */
  relativeTolerance?: number;
}

/** |a − b| ≤ max(absoluteTolerance, relativeTolerance · max(|a|, |b|)). */
export function numbersClose(first: number, second: number, tolerance: Tolerance = {}): boolean {
  const absolute = tolerance.absoluteTolerance ?? 1e-9;
  const relative = tolerance.relativeTolerance ?? 1e-9;
  const scale = Math.max(Math.abs(first), Math.abs(second));
  return Math.abs(first - second) <= Math.max(absolute, relative * scale);
}

export interface NumericOptions extends Tolerance {
  /**
   * "whole": the trimmed text must be one number. "last": the last number in the text counts
   * ("so x = 12" → 12).
   * @default 'last'
   */
  extract?: 'whole' | 'last';
}

/** Compares the number in `text` with the number `expected`; see NumericOptions. */
export function verifyNumeric(
  expected: string,
  text: string,
  options: NumericOptions = {},
): VerifyResult {
  const extract = options.extract ?? 'last';
  const expectedValue = parseNumber(expected);
  if (expectedValue === null) {
    return failure(expected, null, `the reference answer "${expected}" is not a number`);
  }
  let extracted: { text: string; value: number } | null;
  if (extract === 'whole') {
    const value = parseNumber(text);
    extracted = value === null ? null : { text: text.trim(), value };
  } else {
    extracted = findNumbers(text).at(-1) ?? null;
  }
  if (extracted === null) {
    const where = extract === 'whole' ? 'the text is not a single number' : 'no number in the text';
    return failure(expected, null, where);
  }
  const correct = numbersClose(extracted.value, expectedValue, options);
  return {
    reward: correct ? 1 : 0,
    correct,
    details: {
      verifier: 'numeric',
      extracted: extracted.text,
      expected: expected.trim(),
      explanation: `${extract === 'whole' ? 'whole text' : 'last number'} ${extracted.value} ${
        correct ? 'matches' : 'differs from'
      } ${expectedValue}`,
    },
  };
}

function failure(expected: string, extracted: string | null, explanation: string): VerifyResult {
  return {
    reward: 0,
    correct: false,
    details: { verifier: 'numeric', extracted, expected: expected.trim(), explanation },
  };
}
