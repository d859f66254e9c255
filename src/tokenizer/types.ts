/**
 * What every tokenizer offers the rest of teamtr: the built-in character tokenizer and Hugging
 * Face `tokenizer.json` support implement the same interface, so models, tasks and the team
 * runtime never ask which one they hold.
 *
 * Token ids are integers in [0, vocabSize). `encode` never adds special tokens by itself and
 * never turns the text "<eos>" into the end-of-sequence id: callers add specials explicitly by
 * id, so user text cannot forge them.
 */
export interface Tokenizer {
  /** The number of distinct token ids (the model's embedding rows must be at least this). */
  readonly vocabSize: number;
  /** Beginning-of-sequence id, if the tokenizer has one. */
  readonly bosId?: number;
  /** End-of-sequence id: generation stops when it is sampled. */
  readonly eosId?: number;
  /** Padding id for batching. */
  readonly padId?: number;
  /** The id unknown input maps to, if the tokenizer has one. */
  readonly unkId?: number;

  /** Text → token ids. */
  encode(text: string): number[];
  /** Token ids → text. Throws a TeamtrError for an id outside [0, vocabSize). */
  decode(ids: readonly number[], options?: DecodeOptions): string;
  /** The id of a token string (a character or a special such as "<eos>"), or undefined. */
  tokenToId(token: string): number | undefined;
  /** The string of an id, or undefined outside [0, vocabSize). */
  idToToken(id: number): string | undefined;
  /** A JSON value that the matching loader turns back into an equal tokenizer. */
  toJSON(): unknown;
}

export interface DecodeOptions {
  /** Drop special tokens (pad, bos, eos, unk) from the text. @default false */
  skipSpecialTokens?: boolean;
}

/**
 * One tokenizer file format: recognizes its JSON and rebuilds a tokenizer from it. Loaders
 * keep a list of these rather than branching on format names.
 */
export interface TokenizerFormat {
  /** For messages, e.g. "teamtr-char". */
  readonly name: string;
  /** Whether `json` is in this format (cheap; full validation happens in `fromJSON`). */
  matches(json: unknown): boolean;
  /** Validates `json` and builds the tokenizer; `source` names the file in errors. */
  fromJSON(json: unknown, source: string): Tokenizer;
}
