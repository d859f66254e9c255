import { z } from 'zod';
import { CharTokenizer } from '../tokenizer/char.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { ConfigError } from '../util/errors.js';
import { parseOr, parseWithSchema } from '../util/schema.js';
import { postJson, RemoteAgentError, type HttpSettings } from './openai-client.js';
import {
  TokenizingPolicy,
  turnTerminator,
  type Completion,
  type CompletionRequest,
  type CompletionSettings,
} from './policy.js';
import { singleLine } from './render.js';

export { RemoteAgentError } from './openai-client.js';

/**
 * A frozen agent played by a model behind an OpenAI-compatible endpoint (vLLM, llama.cpp,
 * OpenAI, another `teamtr serve`). It plays its turns but is never trained: it has no local
 * network (`model` is null), and what the trainer would need of a trained agent is unknown for
 * it, so each completion records `tokens: []`, `logProbs: []` and `inputIds: []`, and only its
 * text enters the shared context. Its generated tokens count toward training budgets as the
 * server reports them (`usage.completion_tokens`; a server that reports none counts 0).
 *
 * The rendered input goes out as one user message (`api: "chat"`) or as a raw prompt
 * (`api: "completions"`), with "\n" as a stop string since a turn is one line. Each request's
 * seed comes from its random stream, so a server that honours seeds answers reproducibly.
 */

export const remoteEndpointSchema = z.strictObject({
  /** e.g. "http://127.0.0.1:8000/v1" (the part before /chat/completions). */
  baseURL: z.string().url(),
  /** The model name the server knows. */
  model: z.string().min(1),
  /** Name of the environment variable holding the API key (sent as a Bearer token). */
  apiKeyEnv: z.string().min(1).optional(),
  api: z.enum(['chat', 'completions']).default('chat'),
  /** Per attempt. */
  timeoutSeconds: z.number().positive().default(60),
  /** Further attempts after a timeout, a lost connection, 429 or 5xx. */
  retries: z.number().int().nonnegative().default(3),
  /** Backoff before retry k is retryDelaySeconds·2^k (or the server's Retry-After). */
  retryDelaySeconds: z.number().nonnegative().default(0.5),
  /** Requests in flight at once. */
  concurrency: z.number().int().positive().default(4),
  /** Cap on a turn's tokens. @default the protocol's maxTurnTokens */
  maxTokens: z.number().int().positive().optional(),
});
export type RemoteEndpointConfig = z.output<typeof remoteEndpointSchema>;
export type RemoteEndpointInput = z.input<typeof remoteEndpointSchema>;

/** OpenAI's `usage`; optional, and only the completion count matters here. */
const usageSchema = z
  .looseObject({ completion_tokens: z.number().int().nonnegative().optional() })
  .nullable()
  .optional();
const chatResponseSchema = z.looseObject({
  usage: usageSchema,
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({ content: z.string().nullable() }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});
const completionResponseSchema = z.looseObject({
  usage: usageSchema,
  choices: z
    .array(z.looseObject({ text: z.string(), finish_reason: z.string().nullable().optional() }))
    .min(1),
});

/** Runs at most `limit` tasks at once, in submission order. */
async function mapWithConcurrency<Input, Output>(
  items: readonly Input[],
  limit: number,
  task: (item: Input) => Promise<Output>,
): Promise<Output[]> {
  const results: Output[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export interface RemotePolicyOptions {
  /** Stands in for `encodeInput` (the trainer never uses it for a frozen agent). @default the character tokenizer */
  tokenizer?: Tokenizer;
  /** Where the API key variable is read. @default process.env */
  environment?: NodeJS.ProcessEnv;
}

export class RemotePolicy extends TokenizingPolicy {
  readonly model = null;
  readonly config: RemoteEndpointConfig;
  private readonly http: HttpSettings;

  constructor(config: RemoteEndpointInput, options: RemotePolicyOptions = {}, source = 'endpoint') {
    super(options.tokenizer ?? new CharTokenizer());
    this.config = parseWithSchema(remoteEndpointSchema, config, source);
    let apiKey: string | null = null;
    if (this.config.apiKeyEnv !== undefined) {
      apiKey = (options.environment ?? process.env)[this.config.apiKeyEnv] ?? null;
      if (!apiKey)
        throw new ConfigError(
          `${source}.apiKeyEnv`,
          `the environment variable ${this.config.apiKeyEnv} is not set; export it with the API key`,
        );
    }
    this.http = {
      apiKey,
      apiKeyEnv: this.config.apiKeyEnv ?? null,
      timeoutMs: this.config.timeoutSeconds * 1000,
      retries: this.config.retries,
      retryDelayMs: this.config.retryDelaySeconds * 1000,
    };
  }

  async complete(
    requests: readonly CompletionRequest[],
    settings: CompletionSettings,
  ): Promise<Completion[]> {
    return mapWithConcurrency(requests, this.config.concurrency, (request) =>
      this.completeOne(request, settings),
    );
  }

  private async completeOne(
    request: CompletionRequest,
    settings: CompletionSettings,
  ): Promise<Completion> {
    const { api, model, baseURL } = this.config;
    const common = {
      model,
      max_tokens: this.config.maxTokens ?? settings.maxNewTokens,
      temperature: settings.temperature ?? 1,
      // OpenAI servers take at most 4 stop strings; the rest are cut here below.
      stop: [turnTerminator, ...(settings.stop ?? [])].slice(0, 4),
      seed: request.random.nextUint32() & 0x7fffffff,
      stream: false,
    };
    const url = `${baseURL.replace(/\/+$/, '')}/${api === 'chat' ? 'chat/completions' : 'completions'}`;
    const body =
      api === 'chat'
        ? { ...common, messages: [{ role: 'user', content: request.input }] }
        : { ...common, prompt: request.input };
    const response = await postJson(url, body, this.http);
    const schema = api === 'chat' ? chatResponseSchema : completionResponseSchema;
    const parsed = parseOr(
      schema,
      response.json,
      ([issue]) =>
        new RemoteAgentError(
          url,
          `malformed response: ${issue.path.join('.') || 'body'}: ${issue.message} (body starts ${JSON.stringify(response.text.slice(0, 200))})`,
        ),
    );
    const choice = parsed.choices[0]!;
    const raw =
      'message' in choice
        ? ((choice as { message: { content: string | null } }).message.content ?? '')
        : (choice as { text: string }).text;
    // A turn is one line: keep what precedes the first newline, even if the server ignored `stop`.
    // The same for the agent's own stop strings.
    const ends = [turnTerminator, ...(settings.stop ?? [])]
      .map((entry) => raw.indexOf(entry))
      .filter((at) => at >= 0);
    const cut = ends.length ? Math.min(...ends) : -1;
    const text = singleLine(cut >= 0 ? raw.slice(0, cut) : raw);
    const finishReason = cut >= 0 || choice.finish_reason === 'stop' ? 'stop' : 'length';
    // Generated tokens count toward training budgets like a local agent's; a server that
    // reports no usage counts as 0.
    const generatedTokenCount = parsed.usage?.completion_tokens ?? 0;
    return { inputIds: [], tokens: [], logProbs: [], text, finishReason, generatedTokenCount };
  }
}
