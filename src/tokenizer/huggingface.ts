import path from 'node:path';
import { Tokenizer as LibraryTokenizer } from '@huggingface/tokenizers';
import { z } from 'zod';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import type { DecodeOptions, Tokenizer, TokenizerFormat } from './types.js';
import { largest } from '../util/extremes.js';
import { checkTokenizerPatterns } from './regex-safety.js';
import { checkEncodedIds, checkVocabularyIds } from './vocabulary-checks.js';

/**
 * Hugging Face tokenizers (`tokenizer.json` + `tokenizer_config.json`) behind the engine's
 * Tokenizer interface, run by the maintained @huggingface/tokenizers library (BPE, byte-level
 * BPE, WordPiece and Unigram models; WordLevel is not implemented by the library).
 *
 * Special tokens: `encode` is for untrusted text and never yields a special id (as Hugging
 * Face's `split_special_tokens=True`): it runs on a second library instance that does not split
 * special added tokens out of the text. `encodeWithSpecialTokens` is for text the program built
 * itself (a rendered chat template), where "<|im_start|>" must become its id.
 *
 * BOS: `bosId` is set only when the tokenizer itself prepends BOS (`add_bos_token`, or a
 * TemplateProcessing post-processor starting with it), since the team runtime prepends
 * `bosId` to every input; Qwen and GPT-2 tokenizers have a BOS string but do not add it.
 */

const tokenContentSchema = z
  .union([z.string(), z.looseObject({ content: z.string() })])
  .nullable()
  .optional();
type TokenContent = z.infer<typeof tokenContentSchema>;

const addedTokenSchema = z.looseObject({
  id: z.number().int().nonnegative(),
  content: z.string().min(1),
  special: z.boolean().default(false),
});

export const tokenizerJsonSchema = z.looseObject({
  model: z.looseObject({
    /** The model kinds @huggingface/tokenizers implements. */
    type: z.enum(['BPE', 'WordPiece', 'Unigram']).optional(),
    vocab: z.union([
      z.record(z.string(), z.number().int().nonnegative()),
      z.array(z.tuple([z.string(), z.number()])),
    ]),
    unk_token: z.string().nullable().optional(),
  }),
  added_tokens: z.array(addedTokenSchema).default([]),
});

export const tokenizerConfigSchema = z.looseObject({
  bos_token: tokenContentSchema,
  eos_token: tokenContentSchema,
  pad_token: tokenContentSchema,
  unk_token: tokenContentSchema,
  additional_special_tokens: z
    .array(z.union([z.string(), z.looseObject({ content: z.string() })]))
    .optional(),
  added_tokens_decoder: z
    .record(z.string(), z.looseObject({ content: z.string(), special: z.boolean().default(false) }))
    .optional(),
  add_bos_token: z.boolean().optional(),
  clean_up_tokenization_spaces: z.boolean().optional(),
  chat_template: z
    .union([z.string(), z.array(z.looseObject({ name: z.string(), template: z.string() }))])
    .nullable()
    .optional(),
});

export type HuggingFaceTokenizerConfig = z.output<typeof tokenizerConfigSchema>;

/** What `toJSON` writes: both Hugging Face files, verbatim, under one teamtr envelope. */
export interface HuggingFaceTokenizerJson {
  type: 'huggingface';
  version: 1;
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
}

function contentOf(token: TokenContent): string | null {
  if (token === null || token === undefined) return null;
  return typeof token === 'string' ? token : token.content;
}

export class HuggingFaceTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId?: number;
  readonly eosId?: number;
  readonly padId?: number;
  readonly unkId?: number;
  /** The BOS string chat templates see as `bos_token` (even when BOS is not prepended). */
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  /** The chat template of tokenizer_config.json (or chat_template.jinja), if any. */
  readonly chatTemplate: string | null;
  /** Every id `skipSpecialTokens` drops. */
  readonly specialIds: ReadonlySet<number>;
  private readonly full: LibraryTokenizer;
  private readonly untrusted: LibraryTokenizer;
  private readonly tokens: string[];
  private readonly idsByToken = new Map<string, number>();
  private readonly cleanUpSpaces: boolean;

  constructor(
    readonly tokenizerJson: Record<string, unknown>,
    readonly config: Record<string, unknown>,
    /** The tokenizer.json it came from, for errors and warnings. */
    readonly source = 'tokenizer.json',
  ) {
    const parsed = parseWithSchema(tokenizerJsonSchema, tokenizerJson, source);
    const settings = parseWithSchema(
      tokenizerConfigSchema,
      config,
      path.join(path.dirname(source), 'tokenizer_config.json'),
    );
    const addedTokens = mergeAddedTokens(parsed.added_tokens, settings);
    checkVocabularyIds(parsed.model, addedTokens, source);
    checkTokenizerPatterns(tokenizerJson, source);
    const roles = {
      bos: contentOf(settings.bos_token),
      eos: contentOf(settings.eos_token),
      pad: contentOf(settings.pad_token),
      unk: contentOf(settings.unk_token) ?? parsed.model.unk_token ?? null,
    };
    [this.full, this.untrusted] = libraryTokenizers(
      tokenizerJson,
      config,
      parsed.model,
      addedTokens,
      roles,
      source,
    );
    this.tokens = vocabularyList(this.full, source);
    this.tokens.forEach((token, id) => {
      if (!this.idsByToken.has(token)) this.idsByToken.set(token, id);
    });
    this.vocabSize = this.tokens.length;
    const idOf = (role: string, token: string | null): number | undefined =>
      roleTokenId(this.idsByToken, source, role, token);
    this.eosId = idOf('eos', roles.eos);
    this.padId = idOf('pad', roles.pad);
    this.unkId = idOf('unk', roles.unk);
    this.bosToken = roles.bos;
    this.eosToken = roles.eos;
    const bosId = idOf('bos', roles.bos);
    if (bosId !== undefined && prependsBos(settings, tokenizerJson, roles.bos!)) this.bosId = bosId;
    const additional = (settings.additional_special_tokens ?? []).map((token) => contentOf(token)!);
    const roleAndAdditional = [roles.bos, roles.eos, roles.pad, roles.unk, ...additional];
    this.specialIds = specialTokenIds(addedTokens, roleAndAdditional, this.idsByToken);
    this.cleanUpSpaces = settings.clean_up_tokenization_spaces ?? false;
    this.chatTemplate = selectChatTemplate(settings.chat_template);
  }

  /** Untrusted text → ids; text spelling a special token never becomes its id. */
  encode(text: string): number[] {
    if (text.length === 0) return [];
    const ids: number[] = this.untrusted.encode(text, { add_special_tokens: false }).ids;
    checkEncodedIds(ids, this.vocabSize, text);
    // Unknown characters legitimately become the unk token; no other special may appear.
    const forged = ids.find((id) => this.specialIds.has(id) && id !== this.unkId);
    if (forged !== undefined) {
      throw new TeamtrError(
        `tokenizer: the text produced special token ${JSON.stringify(this.tokens[forged])} (id ${forged}) though special tokens are not split from untrusted text; this tokenizer's model matches special tokens inside ordinary text, which teamtr does not support`,
      );
    }
    return ids;
  }

  /** Program-built text (e.g. a rendered chat template) → ids, special token strings included. */
  encodeWithSpecialTokens(text: string): number[] {
    if (text.length === 0) return [];
    const ids: number[] = this.full.encode(text, { add_special_tokens: false }).ids;
    checkEncodedIds(ids, this.vocabSize, text);
    return ids;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new TeamtrError(
          `tokenizer: cannot decode id ${id} (valid ids: 0 to ${this.vocabSize - 1})`,
        );
      }
    }
    const kept = options.skipSpecialTokens
      ? ids.filter((id) => !this.specialIds.has(id))
      : [...ids];
    if (kept.length === 0) return '';
    return this.full.decode(kept, {
      skip_special_tokens: false,
      clean_up_tokenization_spaces: this.cleanUpSpaces,
    });
  }

  tokenToId(token: string): number | undefined {
    return this.idsByToken.get(token);
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) ? this.tokens[id] : undefined;
  }

  toJSON(): HuggingFaceTokenizerJson {
    return { type: 'huggingface', version: 1, tokenizer: this.tokenizerJson, config: this.config };
  }
}

type AddedToken = z.output<typeof addedTokenSchema>;

/**
 * A Unigram model matches any vocabulary piece inside text, "</s>" included. For untrusted text
 * the special pieces are renamed to strings of Unicode noncharacters (U+FFFF), which text does
 * not carry; `encode` still checks its output, so a forged special can never pass silently.
 */
/** The id of a role's token (`bos`, `eos`, ...) named by tokenizer_config.json, if it names one. */
function roleTokenId(
  idsByToken: ReadonlyMap<string, number>,
  source: string,
  role: string,
  token: string | null,
): number | undefined {
  if (token === null) return undefined;
  const id = idsByToken.get(token);
  if (id !== undefined) return id;
  const named = `${role}_token ${JSON.stringify(token)} of tokenizer_config.json`;
  throw new FileFormatError(source, `${named} is not in the vocabulary`);
}

/** The special added tokens' ids, then those of the named tokens that are in the vocabulary. */
function specialTokenIds(
  addedTokens: readonly AddedToken[],
  named: readonly (string | null)[],
  idsByToken: ReadonlyMap<string, number>,
): Set<number> {
  return new Set<number>([
    ...addedTokens.filter((token) => token.special).map((token) => token.id),
    ...named.flatMap((token) => {
      const id = token === null ? undefined : idsByToken.get(token);
      return id === undefined ? [] : [id];
    }),
  ]);
}

function withoutMatchableSpecials(
  model: z.output<typeof tokenizerJsonSchema>['model'],
  specials: ReadonlySet<string>,
): Record<string, unknown> {
  if (!Array.isArray(model.vocab)) return model;
  return {
    ...model,
    vocab: model.vocab.map(([piece, score], id) => [
      specials.has(piece) ? `\uffff${id}\uffff` : piece,
      score,
    ]),
  };
}

/** tokenizer.json's added tokens, plus any only tokenizer_config.json's added_tokens_decoder lists. */
function mergeAddedTokens(
  fromTokenizer: AddedToken[],
  settings: HuggingFaceTokenizerConfig,
): AddedToken[] {
  const byId = new Map(fromTokenizer.map((token) => [token.id, token]));
  for (const [idText, token] of Object.entries(settings.added_tokens_decoder ?? {})) {
    const id = Number(idText);
    if (Number.isInteger(id) && id >= 0 && !byId.has(id)) byId.set(id, { ...token, id });
  }
  return [...byId.values()].sort((left, right) => left.id - right.id);
}

interface RoleTokens {
  bos: string | null;
  eos: string | null;
  pad: string | null;
  unk: string | null;
}

/**
 * Two library instances: `full` splits every added token out of text (for program-built text
 * and for decoding); `untrusted` leaves special added tokens to the ordinary model.
 */
function libraryTokenizers(
  tokenizerJson: Record<string, unknown>,
  config: Record<string, unknown>,
  model: z.output<typeof tokenizerJsonSchema>['model'],
  addedTokens: AddedToken[],
  roles: RoleTokens,
  source: string,
): [LibraryTokenizer, LibraryTokenizer] {
  // The library reads role tokens from its config as plain strings.
  const libraryConfig = {
    ...config,
    bos_token: roles.bos,
    eos_token: roles.eos,
    pad_token: roles.pad,
    unk_token: roles.unk,
  };
  const specials = new Set(
    addedTokens.filter((token) => token.special).map((token) => token.content),
  );
  const untrustedJson = {
    ...tokenizerJson,
    added_tokens: addedTokens.filter((token) => !token.special),
    model: withoutMatchableSpecials(model, specials),
  };
  return [
    createLibraryTokenizer({ ...tokenizerJson, added_tokens: addedTokens }, libraryConfig, source),
    createLibraryTokenizer(untrustedJson, libraryConfig, source),
  ];
}

function createLibraryTokenizer(
  json: Record<string, unknown>,
  config: Record<string, unknown>,
  source: string,
): LibraryTokenizer {
  try {
    // The library wants every pipeline stage present, null when unused.
    const stages = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null };
    return new LibraryTokenizer({ ...stages, ...json }, config);
  } catch (error) {
    throw new FileFormatError(
      source,
      `the tokenizer library refused this tokenizer: ${(error as Error).message}`,
    );
  }
}

/** id → token string for every id; the vocabulary must have no holes. */
function vocabularyList(library: LibraryTokenizer, source: string): string[] {
  const vocabulary = library.get_vocab(true);
  // A loop, not Math.max(...ids): spreading Qwen2.5's 151,665 ids overflows the call stack.
  const size = largest([...vocabulary.values()], (id) => id, -1) + 1;
  const tokens: string[] = new Array(size);
  for (const [token, id] of vocabulary) tokens[id] = token;
  for (let id = 0; id < size; id++) {
    if (tokens[id] === undefined)
      throw new FileFormatError(
        source,
        `the vocabulary has no token with id ${id} (ids must run from 0 without gaps)`,
      );
  }
  if (size === 0) throw new FileFormatError(source, 'the vocabulary is empty');
  return tokens;
}

function prependsBos(
  settings: HuggingFaceTokenizerConfig,
  tokenizerJson: Record<string, unknown>,
  bos: string,
): boolean {
  if (settings.add_bos_token !== undefined) return settings.add_bos_token;
  const processor = tokenizerJson.post_processor as
    | { type?: string; single?: Array<Record<string, { id?: string }>>; processors?: unknown[] }
    | null
    | undefined;
  const candidates =
    processor?.type === 'Sequence'
      ? ((processor.processors as (typeof processor)[]) ?? [])
      : [processor];
  return candidates.some(
    (candidate) =>
      candidate?.type === 'TemplateProcessing' && candidate.single?.[0]?.SpecialToken?.id === bos,
  );
}

function selectChatTemplate(template: HuggingFaceTokenizerConfig['chat_template']): string | null {
  if (template === null || template === undefined) return null;
  if (typeof template === 'string') return template;
  return (
    template.find((entry) => entry.name === 'default')?.template ?? template[0]?.template ?? null
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Reads the teamtr envelope (`toJSON()`), or a bare Hugging Face tokenizer.json (then without
 * tokenizer_config.json: no role tokens, no chat template).
 */
export const huggingFaceTokenizerFormat: TokenizerFormat = {
  name: 'huggingface (tokenizer.json)',
  matches: (json) =>
    isObject(json) &&
    (json.type === 'huggingface' || (isObject(json.model) && Array.isArray(json.added_tokens))),
  fromJSON(json, source) {
    const value = json as Record<string, unknown>;
    if (value.type !== 'huggingface') return new HuggingFaceTokenizer(value, {}, source);
    if (value.version !== 1 || !isObject(value.tokenizer) || !isObject(value.config)) {
      throw new FileFormatError(
        source,
        'a teamtr huggingface tokenizer needs version 1 and the objects "tokenizer" and "config"',
      );
    }
    return new HuggingFaceTokenizer(value.tokenizer, value.config, source);
  },
};
