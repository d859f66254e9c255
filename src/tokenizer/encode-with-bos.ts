import type { Tokenizer } from './types.js';

/**
 * The token ids a model reads for `text`: the tokenizer's BOS id when it has one, then the
 * encoded text. `encode` itself never adds BOS (types.ts); prompts go through here.
 */
export function encodeWithBos(tokenizer: Tokenizer, text: string): number[] {
  const ids = tokenizer.encode(text);
  return tokenizer.bosId !== undefined ? [tokenizer.bosId, ...ids] : ids;
}
