import { randomUUID } from 'node:crypto';
import { HttpError } from '../../http/errors.js';
import {
  createSamplingSessionRequestSchema,
  routes,
  sampleRequestSchema,
} from '../../tinker/json-wire.js';
import type { SamplingParameters } from '../../tinker/types.js';
import { encodeSampleResponse } from '../../tinker/wire-codec.js';
import {
  future,
  now,
  parseBody,
  postRoute,
  sessionRequest,
  type Answer,
  type RouteCall,
  type TinkerRoute,
} from './route-table.js';
import type { SamplerSource } from './local-engine.js';

/** The sampling routes: sampling sessions, asample, and what a sampler samples from. */

function createSamplingSession(call: RouteCall): Answer {
  const { state } = call;
  const request = sessionRequest(call, createSamplingSessionRequestSchema);
  const source = { modelPath: request.model_path, baseModel: request.base_model };
  now(400, () => state.engine.checkSamplerSource(source));
  const samplingSessionId = `sampler-${randomUUID()}`;
  state.samplers.set(samplingSessionId, source);
  return { json: { type: 'create_sampling_session', sampling_session_id: samplingSessionId } };
}

function samplerSource(
  call: RouteCall,
  request: {
    sampling_session_id?: string | null;
    model_path?: string | null;
    base_model?: string | null;
  },
): SamplerSource {
  if (!request.sampling_session_id)
    return { modelPath: request.model_path, baseModel: request.base_model };
  const source = call.state.samplers.get(request.sampling_session_id);
  if (!source)
    throw new HttpError(404, `unknown sampling_session_id "${request.sampling_session_id}"`);
  return source;
}

function sample(call: RouteCall): Answer {
  const request = parseBody(call, sampleRequestSchema);
  const source = samplerSource(call, request);
  const prompt = request.prompt.chunks.flatMap((chunk, index) => {
    if (chunk.type !== 'encoded_text' || !chunk.tokens)
      throw new HttpError(
        400,
        `${call.path}: prompt.chunks[${index}] is a "${chunk.type}" chunk; the local engine takes encoded_text chunks (token ids) only`,
      );
    return chunk.tokens;
  });
  const wire = request.sampling_params;
  const stop = wire.stop === null || wire.stop === undefined ? [] : [wire.stop].flat();
  const parameters: SamplingParameters = {
    maxTokens: wire.max_tokens ?? 16,
    seed: wire.seed ?? undefined,
    temperature: wire.temperature,
    topK: wire.top_k,
    topP: wire.top_p,
    stopTokens: stop.filter((value): value is number => typeof value === 'number'),
    stopStrings: stop.filter((value): value is string => typeof value === 'string'),
  };
  return future(call.state, async () => ({
    kind: 'protobuf',
    bytes: encodeSampleResponse(
      await call.state.engine.sample(source, {
        prompt,
        parameters,
        numSamples: request.num_samples,
        promptLogProbs: request.prompt_logprobs ?? false,
        topkPromptLogProbs: request.topk_prompt_logprobs,
      }),
    ),
  }));
}

function sampler({ state, params }: RouteCall): Answer {
  const source = state.samplers.get(params.id!);
  if (!source) throw new HttpError(404, `unknown sampler "${params.id}"`);
  return {
    json: {
      sampler_id: params.id,
      base_model: state.engine.baseModelName,
      model_path: source.modelPath ?? null,
    },
  };
}

export const samplingRoutes: TinkerRoute[] = [
  postRoute(routes.createSamplingSession, createSamplingSession),
  postRoute(routes.sample, sample),
  {
    method: 'GET',
    path: `${routes.samplers}/:id`,
    body: 'none',
    idempotent: false,
    handle: sampler,
  },
];
