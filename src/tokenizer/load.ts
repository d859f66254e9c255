import { writeJsonAtomic } from '../io/atomic.js';
import { readJsonFile } from '../io/json-file.js';
import { FileFormatError } from '../util/errors.js';
import { charTokenizerFormat } from './char.js';
import { huggingFaceTokenizerFormat } from './huggingface.js';
import type { Tokenizer, TokenizerFormat } from './types.js';

/**
 * Tokenizer files (`tokenizer.json`): saving any tokenizer and loading whichever known format a
 * file holds. New formats join `tokenizerFormats`; nothing else changes.
 */

export const tokenizerFormats: TokenizerFormat[] = [
  charTokenizerFormat,
  huggingFaceTokenizerFormat,
];

/** Rebuilds a tokenizer from its JSON (e.g. a checkpoint's `tokenizer`); `source` names it in errors. */
export function tokenizerFromJSON(json: unknown, source: string): Tokenizer {
  const format = tokenizerFormats.find((candidate) => candidate.matches(json));
  if (!format) {
    const names = tokenizerFormats.map((candidate) => candidate.name).join(', ');
    throw new FileFormatError(
      source,
      `not a tokenizer file of a known format (supported: ${names})`,
    );
  }
  return format.fromJSON(json, source);
}

export async function loadTokenizer(filePath: string): Promise<Tokenizer> {
  return tokenizerFromJSON(await readJsonFile(filePath, 'tokenizerBytes'), filePath);
}

/** Writes `tokenizer.toJSON()` atomically. */
export async function saveTokenizer(filePath: string, tokenizer: Tokenizer): Promise<void> {
  await writeJsonAtomic(filePath, tokenizer.toJSON());
}
