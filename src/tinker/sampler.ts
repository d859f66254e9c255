import type { TinkerConnection } from './connection.js';
import { routes, samplingParamsBody } from './json-wire.js';
import type { SampleResult, SamplingParameters } from './types.js';

/** A sampling session on the service: completions with per-token log-probs. */
export class TinkerSampler {
  private sequence = 0;

  constructor(
    private readonly client: TinkerConnection,
    readonly samplingSessionId: string,
  ) {}

  /** `numSamples` completions of `prompt` (token ids), each with its log-probs. */
  async sample(options: {
    prompt: number[];
    parameters: SamplingParameters;
    numSamples?: number;
    promptLogProbs?: boolean;
  }): Promise<SampleResult> {
    return (await this.client.submit(
      routes.sample,
      {
        json: {
          num_samples: options.numSamples ?? 1,
          prompt: { chunks: [{ tokens: options.prompt, type: 'encoded_text' }] },
          sampling_params: samplingParamsBody(options.parameters),
          sampling_session_id: this.samplingSessionId,
          seq_id: this.sequence++,
          prompt_logprobs: options.promptLogProbs ?? false,
          topk_prompt_logprobs: 0,
          type: 'sample',
        },
      },
      'sample',
    )) as SampleResult;
  }
}
