import { randomUUID } from 'node:crypto';
import { HttpError } from '../../http/errors.js';
import {
  createModelRequestSchema,
  getInfoRequestSchema,
  loadWeightsRequestSchema,
  optimStepRequestSchema,
  routes,
  saveWeightsForSamplerRequestSchema,
  saveWeightsRequestSchema,
  unloadModelRequestSchema,
  weightsInfoRequestSchema,
} from '../../tinker/json-wire.js';
import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  WireFormatError,
} from '../../tinker/wire-codec.js';
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

/** The training routes: models, forward_backward, optim_step, saving and loading weights. */

function createModel(call: RouteCall): Answer {
  const { state } = call;
  const request = sessionRequest(call, createModelRequestSchema);
  const lora = request.lora_config;
  if (!lora)
    throw new HttpError(
      400,
      `${call.path}: lora_config is required (the local engine trains LoRA adapters only)`,
    );
  return future(state, async () => ({
    kind: 'json',
    body: {
      model_id: await state.engine.createModel(request.base_model, {
        rank: lora.rank,
        seed: lora.seed ?? undefined,
        trainAttention: lora.train_attn,
        trainMlp: lora.train_mlp,
        trainUnembed: lora.train_unembed,
      }),
      type: 'create_model',
    },
  }));
}

function forwardBackward({ state, body, path }: RouteCall): Answer {
  let request;
  try {
    request = decodeForwardBackwardRequest(body as Uint8Array);
  } catch (error) {
    if (error instanceof WireFormatError) throw new HttpError(400, `${path}: ${error.message}`);
    throw error;
  }
  const { modelId, data, lossFunction, forwardOnly } = request;
  return future(
    state,
    () => ({
      kind: 'protobuf',
      bytes: encodeForwardBackwardOutput(
        state.engine.forwardBackward(modelId, data, lossFunction, forwardOnly),
      ),
    }),
    modelId,
  );
}

function optimStep(call: RouteCall): Answer {
  const { state } = call;
  const request = parseBody(call, optimStepRequestSchema);
  const adam = request.adam_params;
  return future(
    state,
    () => ({
      kind: 'json',
      body: {
        metrics: state.engine.optimStep(request.model_id, {
          learningRate: adam.learning_rate,
          beta1: adam.beta1,
          beta2: adam.beta2,
          epsilon: adam.eps,
          weightDecay: adam.weight_decay,
          gradientClipNorm: adam.grad_clip_norm,
        }),
      },
    }),
    request.model_id,
  );
}

function saveWeights(call: RouteCall): Answer {
  const { state } = call;
  const request = parseBody(call, saveWeightsRequestSchema);
  const name = request.path ?? `step-${randomUUID()}`;
  return future(
    state,
    () => ({
      kind: 'json',
      body: {
        path: state.engine.saveWeights(request.model_id, name, 'weights', {
          ttlSeconds: request.ttl_seconds,
          overwrite: request.overwrite,
        }),
        type: 'save_weights',
      },
    }),
    request.model_id,
  );
}

/**
 * With a path: named sampler weights. Without one (save_weights_and_get_sampling_client): an
 * unnamed snapshot, kept in memory, and a sampling session over it, whose id is the answer.
 */
function saveWeightsForSampler(call: RouteCall): Answer {
  const { state } = call;
  const request = parseBody(call, saveWeightsForSamplerRequestSchema);
  const named = request.path ?? null;
  return future(
    state,
    () => {
      const savedPath = state.engine.saveWeights(
        request.model_id,
        named ?? `ephemeral-${randomUUID()}`,
        'sampler_weights',
        { ttlSeconds: request.ttl_seconds, ephemeral: named === null },
      );
      if (named !== null)
        return { kind: 'json', body: { path: savedPath, type: 'save_weights_for_sampler' } };
      const samplingSessionId = `sampler-${randomUUID()}`;
      state.samplers.set(samplingSessionId, { modelPath: savedPath });
      return {
        kind: 'json',
        body: { sampling_session_id: samplingSessionId, type: 'save_weights_for_sampler' },
      };
    },
    request.model_id,
  );
}

function loadWeights(call: RouteCall): Answer {
  const { state } = call;
  const request = parseBody(call, loadWeightsRequestSchema);
  const modelId = request.model_id;
  if (!modelId)
    throw new HttpError(
      400,
      `${call.path}: give model_id (this server creates models with create_model; loading a checkpoint into a new model by session_id is not supported)`,
    );
  return future(
    state,
    () => {
      state.engine.loadWeights(modelId, request.path, request.optimizer);
      return {
        kind: 'json',
        body: { path: request.path, model_id: modelId, type: 'load_weights' },
      };
    },
    modelId,
  );
}

function modelInfo(call: RouteCall): Answer {
  const { state } = call;
  const { model_id: modelId } = parseBody(call, getInfoRequestSchema);
  const info = now(404, () => state.engine.info(modelId));
  return {
    json: {
      type: 'get_info',
      model_id: modelId,
      model_data: { model_name: info.modelName },
      is_lora: true,
      lora_rank: info.loraRank,
      model_name: info.modelName,
    },
  };
}

function weightsInfo(call: RouteCall): Answer {
  const { state } = call;
  const { tinker_path: weightsPath } = parseBody(call, weightsInfoRequestSchema);
  const entry = now(404, () => state.engine.store.entry(weightsPath));
  return {
    json: {
      base_model: entry.baseModel || state.engine.baseModelName,
      is_lora: true,
      lora_rank: entry.lora.rank,
      train_unembed: entry.lora.trainUnembed ?? true,
      train_mlp: entry.lora.trainMlp ?? true,
      train_attn: entry.lora.trainAttention ?? true,
    },
  };
}

function unloadModel(call: RouteCall): Answer {
  const { state } = call;
  const { model_id: modelId } = parseBody(call, unloadModelRequestSchema);
  return future(
    state,
    () => {
      state.engine.unloadModel(modelId);
      return { kind: 'json', body: { model_id: modelId, type: 'unload_model' } };
    },
    modelId,
  );
}

export const trainingRoutes: TinkerRoute[] = [
  postRoute(routes.createModel, createModel),
  postRoute(routes.getInfo, modelInfo),
  postRoute(routes.unloadModel, unloadModel),
  postRoute(routes.forwardBackward, forwardBackward, 'protobuf'),
  postRoute(routes.optimStep, optimStep),
  postRoute(routes.saveWeights, saveWeights),
  postRoute(routes.saveWeightsForSampler, saveWeightsForSampler),
  postRoute(routes.loadWeights, loadWeights),
  postRoute(routes.weightsInfo, weightsInfo),
];
