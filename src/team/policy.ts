import type { RandomGenerator } from '../util/random.js';
import { encodeWithBos } from '../tokenizer/encode-with-bos.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { generate } from '../nn/generate.js';
import { TeamtrError } from '../util/errors.js';
import type { TransformerLM } from '../nn/transformer.js';
import { chatPromptIds, hasChatTemplate } from '../models/chat.js';
import { chatMessages, type AgentView } from './chat-view.js';
import { largest } from '../util/extremes.js';

export interface CompletionRequest {
  /** The agent's rendered input text (role prompt + shared context + its speaker tag). */
  input: string;
  /**
   * The same context as structure, for policies that render it with a chat template (an
   * instruct model's tokenizer); plain-text policies read `input`.
   */
  view?: AgentView;
  /** The stream this request samples from (per trajectory and turn: common random numbers). */
  random: RandomGenerator;
}

export interface Completion {
  /** The exact token ids the agent was conditioned on (its role prompt + shared context). */
  inputIds: number[];
  /** The exact token ids it emitted (stop token included), never re-tokenized. */
  tokens: number[];
  /** log π(token | prefix) recorded at sampling, under the policy that sampled it. */
  logProbs: number[];
  /** Decoded content text without the stop token (what other agents see). */
  text: string;
  finishReason: 'stop' | 'length';
  /**
   * Tokens generated for this completion when `tokens` does not list them: a remote agent's
   * count as its server reports it (`usage.completion_tokens`). Budgets count these too.
   */
  generatedTokenCount?: number;
  /**
   * [tokens, hidden]: the final hidden states (after the last norm) that predicted each token,
   * when the settings asked for them (keepHiddenStates) and a local model sampled the turn.
   */
  hiddenStates?: Float32Array;
}

export interface CompletionSettings {
  maxNewTokens: number;
  /** @default 1 (RL samples from the policy itself) */
  temperature?: number;
  /**
   * Strings that end a turn: its text stops before the first one, and its tokens end with the
   * token that completed it (never re-tokenized, so what is scored is what was sampled).
   */
  stop?: readonly string[];
  /**
   * Keep each turn's final hidden states (Completion.hiddenStates) when they take at most
   * keptHiddenStatesBudgetBytes: an update of the agent then reads π_old from them. Policies
   * without a local model ignore it. @default false
   */
  keepHiddenStates?: boolean;
  /**
   * Called with each token as the policy draws it (the request's index, the token id and its
   * log-prob), so a server can stream a turn. Policies that receive a turn whole (a remote
   * endpoint) do not call it. Every drawn token is reported, including any past a stop string
   * that the completion then cuts off.
   */
  onToken?: (requestIndex: number, token: number, logProb: number) => void;
}

/** Bytes of hidden states one completion call may keep (CompletionSettings.keepHiddenStates). */
export const keptHiddenStatesBudgetBytes = 64 * 1024 * 1024;

/**
 * What the team runtime needs from an agent's model: complete a batch of rendered inputs
 * with one line each. A local model and a remote endpoint both implement it; only local
 * policies can be trained (they also expose `model`).
 */
export interface AgentPolicy {
  readonly tokenizer: Tokenizer;
  /** The trainable network, when the policy runs locally. */
  readonly model: TransformerLM | null;
  complete(
    requests: readonly CompletionRequest[],
    settings: CompletionSettings,
  ): Promise<Completion[]>;
  /** Token ids of a rendered input: BOS (if any) + encoded text. */
  encodeInput(input: string): number[];
}

/**
 * What every policy shares: it tokenizes its own rendered input (BOS, if the tokenizer has
 * one, then the encoded text); how it samples a turn is its own.
 */
export abstract class TokenizingPolicy implements AgentPolicy {
  abstract readonly model: TransformerLM | null;

  constructor(readonly tokenizer: Tokenizer) {}

  encodeInput(input: string): number[] {
    return encodeWithBos(this.tokenizer, input);
  }

  abstract complete(
    requests: readonly CompletionRequest[],
    settings: CompletionSettings,
  ): Promise<Completion[]>;
}

/** Turns end at a newline: every turn is one line of the shared context. */
export const turnTerminator = '\n';

/**
 * How a policy's sampled tokens become a turn, the same for every policy that samples them (a
 * local model, a Tinker service): which tokens end a turn, its text, and where a stop string
 * cuts it. A plain model (the built-in character models) writes one line; a chat model keeps
 * its lines and ends at its end-of-turn token, which is special and not part of the text.
 */
export class TurnDecoder {
  readonly chat: boolean;
  /** The token ids that end a turn. */
  readonly stopIds: number[];

  constructor(private readonly tokenizer: Tokenizer) {
    this.chat = hasChatTemplate(tokenizer);
    this.stopIds = this.chat ? endOfTurnIds(tokenizer) : turnEndingIds(tokenizer);
  }

  /** The turn's text; a byte-level BPE stop token may carry text before its newline (".\n"). */
  text(tokens: readonly number[]): string {
    const text = this.tokenizer.decode(tokens, { skipSpecialTokens: true });
    return this.chat ? text : text.split(turnTerminator)[0]!;
  }

  /** The completion of sampled tokens, cut after the first token whose text completes a stop. */
  completion(
    inputIds: number[],
    tokens: number[],
    logProbs: number[],
    options: { finishReason: Completion['finishReason']; stop?: readonly string[] },
  ): Completion {
    for (let length = 1; options.stop?.length && length <= tokens.length; length++) {
      const text = this.text(tokens.slice(0, length));
      const at = Math.min(
        ...options.stop.map((entry) => text.indexOf(entry)).filter((at) => at >= 0),
      );
      if (!Number.isFinite(at)) continue;
      return {
        inputIds,
        tokens: tokens.slice(0, length),
        logProbs: logProbs.slice(0, length),
        text: text.slice(0, at),
        finishReason: 'stop',
      };
    }
    return {
      inputIds,
      tokens,
      logProbs,
      text: this.text(tokens),
      finishReason: options.finishReason,
    };
  }
}

/**
 * A local TransformerLM with its tokenizer. A tokenizer with a chat template (an instruct
 * model) gets the shared context as chat messages, and its turn ends at its end-of-turn token,
 * newlines and all; a plain model (the built-in character models) reads the rendered text and
 * writes one line.
 */
export class LocalPolicy extends TokenizingPolicy {
  private readonly turns: TurnDecoder;

  constructor(
    readonly model: TransformerLM,
    tokenizer: Tokenizer,
  ) {
    super(tokenizer);
    this.turns = new TurnDecoder(tokenizer);
    if (this.turns.stopIds.length === 0)
      throw new Error(
        'the tokenizer has neither a token containing a newline nor an EOS token to end turns',
      );
  }

  /** A turn must fit after its input in the model's positions; say which settings to change. */
  private checkContextLength(inputs: readonly number[][], maxNewTokens: number): void {
    const longest = largest(inputs, (input) => input.length);
    const positions = this.model.config.maxPositions;
    if (longest + maxNewTokens <= positions) return;
    throw new TeamtrError(
      `an agent's input is ${longest} tokens (its role prompt, the problem's prompt and the earlier turns) and its turn may take ${maxNewTokens} more (protocol.maxTurnTokens), past its model's ${positions} positions; shorten the role prompt (agents[].rolePrompt) or the prompts, lower protocol.maxTurnTokens, or use a model with a longer context`,
    );
  }

  async complete(
    requests: readonly CompletionRequest[],
    settings: CompletionSettings,
  ): Promise<Completion[]> {
    const inputs = requests.map((request) =>
      this.turns.chat && request.view
        ? chatPromptIds(this.tokenizer, chatMessages(request.view))
        : this.encodeInput(request.input),
    );
    this.checkContextLength(inputs, settings.maxNewTokens);
    const { hiddenSize } = this.model.config;
    const keepHiddenStates =
      settings.keepHiddenStates === true &&
      4 * hiddenSize * settings.maxNewTokens * inputs.length <= keptHiddenStatesBudgetBytes;
    const generated = generate(this.model, {
      keepHiddenStates,
      prompts: inputs,
      maxNewTokens: settings.maxNewTokens,
      random: requests.map((request) => request.random),
      temperature: settings.temperature ?? 1,
      stopTokens: this.turns.stopIds,
      padId: this.tokenizer.padId ?? 0,
      vocabularyLimit: this.tokenizer.vocabSize,
      ...(settings.onToken ? { onToken: settings.onToken } : {}),
    });
    return generated.map((sequence, index) => {
      const completion = this.turns.completion(inputs[index]!, sequence.tokens, sequence.logProbs, {
        finishReason: sequence.finishReason,
        stop: settings.stop,
      });
      // A stop string may cut the turn: the states of the tokens it keeps.
      const kept = sequence.hiddenStates?.slice(0, completion.tokens.length * hiddenSize);
      return kept ? { ...completion, hiddenStates: kept } : completion;
    });
  }
}

/**
 * Every id that ends a turn: the EOS token and each token whose text contains a newline (a
 * character tokenizer has one; byte-level BPE vocabularies have many, such as ".\n" or "\n\n").
 * Computed once per tokenizer.
 */
const turnEndingCache = new WeakMap<Tokenizer, number[]>();
export function turnEndingIds(tokenizer: Tokenizer): number[] {
  const cached = turnEndingCache.get(tokenizer);
  if (cached) return cached;
  const special = new Set([tokenizer.padId, tokenizer.bosId, tokenizer.unkId]);
  const ids: number[] = [];
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    if (special.has(id)) continue;
    if (id === tokenizer.eosId || tokenizer.decode([id]).includes(turnTerminator)) ids.push(id);
  }
  turnEndingCache.set(tokenizer, ids);
  return ids;
}

/** Tokens instruct models end a turn with, besides EOS (ChatML, Llama 3, Phi, Gemma). */
const endOfTurnTokens = ['<|im_end|>', '<|eot_id|>', '<|end|>', '<end_of_turn>', '<|endoftext|>'];

/** A chat model's turn ends at EOS or at its template's end-of-turn token, not at a newline. */
export function endOfTurnIds(tokenizer: Tokenizer): number[] {
  const ids = new Set<number>();
  if (tokenizer.eosId !== undefined) ids.add(tokenizer.eosId);
  for (const token of endOfTurnTokens) {
    const id = tokenizer.tokenToId(token);
    if (id !== undefined) ids.add(id);
  }
  if (ids.size === 0)
    throw new TeamtrError(
      "the chat model's tokenizer has no EOS or end-of-turn token to end a turn with; set eos_token in tokenizer_config.json",
    );
  return [...ids];
}
