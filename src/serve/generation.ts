import { KeyValueCache } from '../nn/kv-cache.js';
import { sampleToken, type SamplingSettings } from '../nn/sampling.js';
import type { TransformerLM } from '../nn/transformer.js';
import { noGrad, tidy } from '../tensor/index.js';
import { firstStop, streamableLength } from '../team/turn-stream.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { tokenBytes } from './token-bytes.js';

/**
 * One sequence decoded token by token with a KV cache, for serving: text arrives as deltas (for
 * streaming), stop strings end it, and the event loop gets a turn between tokens so the server
 * keeps answering (and notices disconnects) while a long completion runs.
 *
 * Deltas never end inside a multi-byte character (a trailing U+FFFD is held back) nor inside a
 * possible stop string, so streamed text always concatenates to the final text.
 */

export interface GenerationSettings extends SamplingSettings {
  maxNewTokens: number;
  /** Token ids that end the completion (not part of the text). */
  stopTokenIds: readonly number[];
  /** Strings that end the completion (cut off, not part of the text). */
  stopStrings: readonly string[];
  random: RandomGenerator;
  /** Alternatives to report per token (0 = none). */
  topLogprobs: number;
}

/** One token as a client sees it: id, text and raw bytes (tokenBytes). */
export interface TokenText {
  token: number;
  text: string;
  bytes: number[];
}

export interface TokenLogprob extends TokenText {
  /** log π(token | prefix) under the model itself (temperature 1). */
  logprob: number;
  top: Array<TokenText & { logprob: number }>;
}

/** A token's id, text and raw bytes. */
export function tokenText(tokenizer: Tokenizer, token: number): TokenText {
  return { token, text: tokenizer.decode([token]), bytes: tokenBytes(tokenizer, token) };
}

export interface GenerationResult {
  text: string;
  finishReason: 'stop' | 'length';
  /** Every sampled token (a stop token included). */
  tokens: number[];
  logprobs: TokenLogprob[];
}

/** Log-probabilities of the `count` most likely ids (in float64). */
function topAlternatives(
  logits: Float32Array,
  vocab: number,
  count: number,
): Array<{ token: number; logprob: number }> {
  let maximum = -Infinity;
  for (let id = 0; id < vocab; id++) maximum = Math.max(maximum, logits[id]!);
  let total = 0;
  for (let id = 0; id < vocab; id++) total += Math.exp(logits[id]! - maximum);
  const normalizer = maximum + Math.log(total);
  const order = Array.from({ length: vocab }, (_value, id) => id).sort(
    (left, right) => logits[right]! - logits[left]! || left - right,
  );
  return order.slice(0, count).map((token) => ({ token, logprob: logits[token]! - normalizer }));
}

/**
 * Logits of the next token for one sequence: the prompt on the first call, one token after.
 * Ids the tokenizer cannot decode (padding rows of a larger embedding) get −∞.
 */
function nextLogits(
  model: TransformerLM,
  cache: KeyValueCache,
  ids: readonly number[],
  usable: number,
): Float32Array {
  return noGrad(() =>
    tidy(() => {
      const logits = model
        .forward({
          ids: Int32Array.from(ids),
          batch: 1,
          length: ids.length,
          cache,
          rows: Int32Array.of(ids.length - 1),
        })
        .data.slice();
      logits.fill(-Infinity, usable);
      return logits;
    }),
  );
}

/**
 * The completion's text as tokens arrive: cut at the first stop string, and emitted in deltas
 * that stop short of a partial character or a possible stop string.
 */
/** A streamed piece of text and the log-probs of the tokens consumed for it. */
export type DeltaListener = (text: string, logprobs: readonly TokenLogprob[]) => void;

export class CompletionText {
  text = '';
  private readonly content: number[] = [];
  private emitted = 0;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly stopStrings: readonly string[],
    private readonly onDelta: ((text: string) => void) | undefined,
  ) {}

  /** Adds a content token; returns true when a stop string ended the text. */
  push(token: number): boolean {
    this.content.push(token);
    const text = this.tokenizer.decode(this.content);
    const stopAt = firstStop(text, this.stopStrings);
    this.text = stopAt >= 0 ? text.slice(0, stopAt) : text;
    if (stopAt >= 0) return true;
    const safe = streamableLength(text, this.stopStrings);
    if (safe > this.emitted) {
      this.onDelta?.(text.slice(this.emitted, safe));
      this.emitted = safe;
    }
    return false;
  }

  /** Emits whatever was held back. */
  flush(): void {
    if (this.text.length > this.emitted) this.onDelta?.(this.text.slice(this.emitted));
    this.emitted = this.text.length;
  }
}

function tokenLogprob(
  tokenizer: Tokenizer,
  logits: Float32Array,
  usable: number,
  token: number,
  logprob: number,
  topCount: number,
): TokenLogprob {
  const top = topCount > 0 ? topAlternatives(logits, usable, topCount) : [];
  return {
    ...tokenText(tokenizer, token),
    logprob,
    top: top.map((entry) => ({ ...tokenText(tokenizer, entry.token), logprob: entry.logprob })),
  };
}

export async function generateText(
  model: TransformerLM,
  tokenizer: Tokenizer,
  promptIds: readonly number[],
  settings: GenerationSettings,
  events: { onDelta?: DeltaListener; signal?: AbortSignal } = {},
): Promise<GenerationResult> {
  if (promptIds.length === 0)
    throw new TeamtrError('the prompt is empty (and the tokenizer has no BOS token to start from)');
  const room = model.config.maxPositions - promptIds.length;
  if (room <= 0)
    throw new TeamtrError(
      `the prompt has ${promptIds.length} tokens; the model's context is ${model.config.maxPositions}`,
    );
  const maxNewTokens = Math.min(settings.maxNewTokens, room);
  const usable = Math.min(tokenizer.vocabSize, model.config.vocabSize);
  const stopIds = new Set(settings.stopTokenIds);
  const cache = new KeyValueCache(model.config, 1, promptIds.length + maxNewTokens);
  const result: GenerationResult = { text: '', finishReason: 'length', tokens: [], logprobs: [] };
  // Each delta carries the log-probs of the tokens consumed since the one before, so a
  // streamed response has every token's log-prob exactly once, as a whole one does.
  let sent = 0;
  const deliver = (text: string) => {
    events.onDelta?.(text, result.logprobs.slice(sent));
    sent = result.logprobs.length;
  };
  const completion = new CompletionText(tokenizer, settings.stopStrings, deliver);
  try {
    let input: readonly number[] = promptIds;
    for (let step = 0; step < maxNewTokens; step++) {
      if (events.signal?.aborted) throw new TeamtrError('the client went away');
      const logits = nextLogits(model, cache, input, usable);
      const { token, logProb } = sampleToken(logits, 0, usable, settings, settings.random);
      result.tokens.push(token);
      result.logprobs.push(
        tokenLogprob(tokenizer, logits, usable, token, logProb, settings.topLogprobs),
      );
      if (stopIds.has(token) || completion.push(token)) {
        result.finishReason = 'stop';
        break;
      }
      input = [token];
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    cache.destroy();
  }
  completion.flush();
  if (sent < result.logprobs.length) deliver('');
  result.text = completion.text;
  return result;
}
