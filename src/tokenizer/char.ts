import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import type { DecodeOptions, Tokenizer, TokenizerFormat } from './types.js';

/**
 * A character-level tokenizer: one id per character (Unicode code point) of a fixed alphabet,
 * after four special tokens with fixed roles. Ids: pad 0, bos 1, eos 2, unk 3, then the
 * alphabet in order. Small and fully deterministic: the tokenizer of the built-in tiny models.
 */

/** Printable ASCII (space through tilde) and newline: 96 characters. */
export const defaultCharAlphabet =
  '\n' +
  Array.from({ length: 0x7e - 0x20 + 1 }, (_, index) => String.fromCharCode(0x20 + index)).join('');

export interface CharSpecialTokens {
  pad: string;
  bos: string;
  eos: string;
  unk: string;
}

export const defaultCharSpecialTokens: CharSpecialTokens = {
  pad: '<pad>',
  bos: '<bos>',
  eos: '<eos>',
  unk: '<unk>',
};

export interface CharTokenizerOptions {
  /** The characters, each once. @default defaultCharAlphabet */
  alphabet?: string;
  /** The special tokens' strings (ids 0–3 in the order pad, bos, eos, unk). @default <pad> <bos> <eos> <unk> */
  specialTokens?: CharSpecialTokens;
  /** Throw on a character outside the alphabet instead of encoding it as unk. @default false */
  strict?: boolean;
}

const specialTokenString = z.string().min(1);

export const charTokenizerJsonSchema = z.strictObject({
  type: z.literal('teamtr-char'),
  version: z.literal(1),
  alphabet: z.string().min(1),
  specialTokens: z.strictObject({
    pad: specialTokenString,
    bos: specialTokenString,
    eos: specialTokenString,
    unk: specialTokenString,
  }),
  strict: z.boolean().default(false),
});

export type CharTokenizerJson = z.input<typeof charTokenizerJsonSchema>;

const specialRoles = ['pad', 'bos', 'eos', 'unk'] as const;

export class CharTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly padId = 0;
  readonly bosId = 1;
  readonly eosId = 2;
  readonly unkId = 3;
  readonly alphabet: string;
  readonly specialTokens: CharSpecialTokens;
  readonly strict: boolean;
  private readonly tokens: string[];
  private readonly idsByToken = new Map<string, number>();

  constructor(options: CharTokenizerOptions = {}) {
    this.alphabet = options.alphabet ?? defaultCharAlphabet;
    this.specialTokens = { ...(options.specialTokens ?? defaultCharSpecialTokens) };
    this.strict = options.strict ?? false;
    this.tokens = [...specialRoles.map((role) => this.specialTokens[role]), ...this.alphabet];
    this.tokens.forEach((token, id) => {
      if (this.idsByToken.has(token)) {
        throw new TeamtrError(
          `character tokenizer: ${JSON.stringify(token)} appears twice (ids ${this.idsByToken.get(token)} and ${id}); list each character once and keep special tokens distinct`,
        );
      }
      this.idsByToken.set(token, id);
    });
    if (this.tokens.length === specialRoles.length) {
      throw new TeamtrError('character tokenizer: the alphabet is empty');
    }
    this.vocabSize = this.tokens.length;
  }

  /** Each code point to its id; unknown ones to unk (or an error when `strict`). */
  encode(text: string): number[] {
    const ids: number[] = [];
    let position = 0;
    for (const character of text) {
      const id = this.idsByToken.get(character);
      if (id !== undefined && id >= specialRoles.length) ids.push(id);
      else if (this.strict) throw unknownCharacterError(character, position);
      else ids.push(this.unkId);
      position++;
    }
    return ids;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    let text = '';
    for (const id of ids) {
      const token = this.idToToken(id);
      if (token === undefined) {
        throw new TeamtrError(
          `character tokenizer: cannot decode id ${id} (valid ids: 0 to ${this.vocabSize - 1})`,
        );
      }
      if (options.skipSpecialTokens && id < specialRoles.length) continue;
      text += token;
    }
    return text;
  }

  tokenToId(token: string): number | undefined {
    return this.idsByToken.get(token);
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) ? this.tokens[id] : undefined;
  }

  toJSON(): CharTokenizerJson {
    return {
      type: 'teamtr-char',
      version: 1,
      alphabet: this.alphabet,
      specialTokens: { ...this.specialTokens },
      strict: this.strict,
    };
  }

  static fromJSON(json: unknown, source: string): CharTokenizer {
    const parsed = parseWithSchema(charTokenizerJsonSchema, json, source);
    return new CharTokenizer(parsed);
  }
}

function unknownCharacterError(character: string, position: number): TeamtrError {
  const codePoint = character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  return new TeamtrError(
    `character tokenizer: ${JSON.stringify(character)} (U+${codePoint}) at character ${position} is not in the alphabet; add it to the alphabet, or turn off strict to encode it as <unk>`,
  );
}

export const charTokenizerFormat: TokenizerFormat = {
  name: 'teamtr-char',
  matches: (json) =>
    json !== null &&
    typeof json === 'object' &&
    (json as { type?: unknown }).type === 'teamtr-char',
  fromJSON: (json, source) => CharTokenizer.fromJSON(json, source),
};
