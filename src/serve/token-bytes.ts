import type { Tokenizer } from '../tokenizer/types.js';

/**
 * The raw bytes of one token, for the `bytes` of OpenAI log-probs. A token whose text is whole
 * characters has its text's UTF-8; a token that holds part of a character (a byte-level BPE
 * piece of "é", a SentencePiece byte fallback "<0xC3>") decodes alone to U+FFFD, whose UTF-8
 * (239, 191, 189) is not what the model emitted: its bytes are read from the vocabulary piece
 * instead, so that a client joining the bytes of consecutive tokens gets the text back.
 */
export function tokenBytes(tokenizer: Tokenizer, id: number): number[] {
  const text = tokenizer.decode([id]);
  if (!text.includes('\ufffd')) return [...Buffer.from(text, 'utf8')];
  const piece = tokenizer.idToToken(id) ?? '';
  const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (fallback) return [Number.parseInt(fallback[1]!, 16)];
  const bytes = [...piece].map((character) => byteLevelAlphabet.get(character));
  if (piece.length > 0 && bytes.every((byte) => byte !== undefined)) return bytes as number[];
  return [...Buffer.from(text, 'utf8')];
}

/**
 * GPT-2's byte-level alphabet (`bytes_to_unicode`), reversed: a byte-level BPE vocabulary
 * writes byte b as b itself when printable (33–126, 161–172, 174–255) and as 256 + k for the
 * k-th other byte, so that every piece is printable text.
 */
const byteLevelAlphabet: ReadonlyMap<string, number> = (() => {
  const printable = (byte: number) =>
    (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
  const alphabet = new Map<string, number>();
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++)
    alphabet.set(String.fromCharCode(printable(byte) ? byte : 256 + shifted++), byte);
  return alphabet;
})();
