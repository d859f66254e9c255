import { createRequire } from 'node:module';
import { FileFormatError } from '../util/errors.js';
import { describeLimit, limitOf } from '../util/limits.js';
import { runWorkerSync } from '../util/sync-worker.js';

/**
 * A tokenizer.json may carry its own regular expressions (Split pre-tokenizers, Replace
 * normalizers and decoders), which JavaScript runs with a backtracking engine: `(a|a)+$` takes
 * 2^n steps on n "a"s and a wrong character, so a 41-character prompt would hang every tool that
 * encodes it. Nothing can interrupt a running regular expression, so each pattern is tried once,
 * at load, on probe strings built to trigger backtracking (runs of one or two characters the
 * pattern names, each followed by every possible "wrong" character), on a worker thread under a
 * time limit. A pattern that does not finish is refused, naming it. Safe patterns run the probes
 * in milliseconds; verdicts are cached per pattern.
 */

export interface TokenizerPattern {
  /** Where it sits in tokenizer.json, e.g. `pre_tokenizer.pretokenizers[0]`. */
  where: string;
  regex: string;
}

/** Every `{"pattern": {"Regex": …}}` of the normalizer, pre-tokenizer and decoder. */
export function tokenizerPatterns(tokenizerJson: Record<string, unknown>): TokenizerPattern[] {
  const found: TokenizerPattern[] = [];
  const visit = (value: unknown, where: string): void => {
    if (Array.isArray(value)) value.forEach((item, index) => visit(item, `${where}[${index}]`));
    else if (value !== null && typeof value === 'object') {
      const pattern = (value as { pattern?: { Regex?: unknown } }).pattern;
      if (typeof pattern?.Regex === 'string') found.push({ where, regex: pattern.Regex });
      for (const [key, child] of Object.entries(value))
        if (key !== 'pattern') visit(child, `${where}.${key}`);
    }
  };
  for (const stage of ['normalizer', 'pre_tokenizer', 'decoder'])
    visit(tokenizerJson[stage], stage);
  return found;
}

const verdicts = new Map<string, string | null>();

/** Refuses a tokenizer whose regular expressions backtrack catastrophically (see above). */
export function checkTokenizerPatterns(
  tokenizerJson: Record<string, unknown>,
  source: string,
): void {
  for (const pattern of tokenizerPatterns(tokenizerJson)) {
    if (!verdicts.has(pattern.regex)) verdicts.set(pattern.regex, probePattern(pattern.regex));
    const problem = verdicts.get(pattern.regex);
    if (problem)
      throw new FileFormatError(
        source,
        `${pattern.where}: the regular expression ${JSON.stringify(pattern.regex)} ${problem}`,
      );
  }
}

const probeRunLength = 48;
/** Characters that most patterns treat differently: letters, digits, spaces, marks, emoji. */
const representatives = ['a', 'Z', '0', ' ', '\n', '\t', '.', "'", '!', '_', '-', 'é', '中', '😀'];

/** Literal characters a pattern names (its `\p{…}`, `\s`-style classes stand for themselves). */
function literalCharacters(regex: string): string[] {
  const characters = new Set<string>();
  for (let index = 0; index < regex.length; index++) {
    const character = regex[index]!;
    if (character === '\\') {
      const next = regex[index + 1] ?? '';
      if ((next === 'p' || next === 'P') && regex[index + 2] === '{')
        index = Math.max(index + 1, regex.indexOf('}', index));
      else {
        if (!/[A-Za-z0-9]/.test(next)) characters.add(next);
        index++;
      }
    } else if (!'()[]{}|*+?.^$'.includes(character)) characters.add(character);
  }
  return [...characters].slice(0, 24);
}

/** Why the pattern is refused, or null when every probe finished within the limit. */
function probePattern(regex: string): string | null {
  const alphabet = [...new Set([...literalCharacters(regex), ...representatives])];
  const outcome = runWorkerSync({
    functionSource: probeFunctionSource,
    input: {
      regex,
      alphabet,
      runLength: probeRunLength,
      library: createRequire(import.meta.url).resolve('@huggingface/tokenizers'),
    },
    milliseconds: limitOf('regexProbeMilliseconds'),
  });
  if (outcome.status === 'timed-out')
    return `backtracks catastrophically: probe strings of ${probeRunLength + 1} characters did not finish within ${describeLimit('regexProbeMilliseconds')}; teamtr refuses it, since one prompt could hang every tool that encodes it (use the pattern the tokenizer was trained with, e.g. its model's standard one)`;
  if (outcome.status === 'threw')
    return `does not compile in JavaScript (${outcome.message}); fix the pattern`;
  return null;
}

/**
 * Runs on the worker, as source text (a compiled function's text could name helpers the
 * worker lacks): compiles the pattern as the tokenizer library does and matches every probe.
 */
const probeFunctionSource = `(input, require) => {
  const { SplitPreTokenizer } = require(input.library);
  const compiled = new SplitPreTokenizer({
    type: 'Split', pattern: { Regex: input.regex }, behavior: 'Isolated', invert: false,
  }).pattern;
  if (compiled === null) throw new Error('the tokenizer library cannot compile it');
  const endings = [...input.alphabet, ''];
  const pairs = input.alphabet.slice(0, 12);
  const runs = input.alphabet.map((character) => character.repeat(input.runLength));
  for (const first of pairs)
    for (const second of pairs) runs.push((first + second).repeat(input.runLength / 2));
  for (const run of runs) for (const ending of endings) (run + ending).match(compiled);
  return true;
}`;
