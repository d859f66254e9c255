import type { RandomGenerator } from '../util/random.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { generate } from '../nn/generate.js';
import type { TransformerLM } from '../nn/transformer.js';

export interface CompletionRequest {
  /** The agent's rendered input text (role prompt + shared context + its speaker tag). */
  input: string;
  /** The stream this request samples from (per trajectory and turn: common random numbers). */
  random: RandomGenerator;
}

export interface Completion {
  inputIds: number[];
  tokens: number[];
  logProbs: number[];
  /** Decoded content text without the stop token. */
  text: string;
  finishReason: 'stop' | 'length';
}

export interface CompletionSettings {
  maxNewTokens: number;
  /** @default 1 (RL samples from the policy itself) */
  temperature?: number;
}

/**
 * What the team runtime needs from an agent's model: complete a batch of rendered inputs
 * with one line each. A local model and a remote endpoint both implement it; only local
 * policies can be trained (they also expose `model`).
 */
export interface AgentPolicy {
  readonly tokenizer: Tokenizer;
  /** The trainable network, when the policy runs locally. */
  readonly model: TransformerLM | null;
  complete(requests: readonly CompletionRequest[], settings: CompletionSettings): Promise<Completion[]>;
  /** Token ids of a rendered input: BOS (if any) + encoded text. */
  encodeInput(input: string): number[];
}

/** Turns end at a newline: every turn is one line of the shared context. */
export const turnTerminator = '\n';

/** A local TransformerLM with its tokenizer. */
export class LocalPolicy implements AgentPolicy {
  private readonly stopIds: number[];

  constructor(readonly model: TransformerLM, readonly tokenizer: Tokenizer) {
    const newline = tokenizer.encode(turnTerminator);
    this.stopIds = [...(newline.length === 1 ? newline : []), ...(tokenizer.eosId !== undefined ? [tokenizer.eosId] : [])];
    if (this.stopIds.length === 0) throw new Error('the tokenizer has neither a single-token newline nor an EOS token to end turns');
  }

  encodeInput(input: string): number[] {
    const ids = this.tokenizer.encode(input);
    return this.tokenizer.bosId !== undefined ? [this.tokenizer.bosId, ...ids] : ids;
  }

  async complete(requests: readonly CompletionRequest[], settings: CompletionSettings): Promise<Completion[]> {
    const inputs = requests.map((request) => this.encodeInput(request.input));
    const generated = generate(this.model, {
      prompts: inputs,
      maxNewTokens: settings.maxNewTokens,
      random: requests.map((request) => request.random),
      temperature: settings.temperature ?? 1,
      stopTokens: this.stopIds,
      padId: this.tokenizer.padId ?? 0,
    });
    return generated.map((sequence, index) => {
      const content = sequence.finishReason === 'stop' ? sequence.tokens.slice(0, -1) : sequence.tokens;
      return {
        inputIds: inputs[index]!,
        tokens: sequence.tokens,
        logProbs: sequence.logProbs,
        text: this.tokenizer.decode(content, { skipSpecialTokens: true }),
        finishReason: sequence.finishReason,
      };
    });
  }
}
