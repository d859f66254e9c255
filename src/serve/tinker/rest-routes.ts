import { HttpError } from '../../http/errors.js';
import { routes } from '../../tinker/json-wire.js';
import type { SavedCheckpoint } from './weights-store.js';
import type { Answer, RouteCall, TinkerRoute } from './route-table.js';

/**
 * The RestClient's routes: training runs (one per model id, those of earlier runs of the
 * server included when their checkpoints are kept in --state-dir) and their checkpoints.
 */

function checkpointBody(entry: SavedCheckpoint) {
  return {
    checkpoint_id: `${entry.kind}/${entry.name}`,
    checkpoint_type: entry.kind === 'weights' ? 'training' : 'sampler',
    time: new Date(entry.createdAt).toISOString(),
    tinker_path: entry.path,
    size_bytes: entry.bytes,
    public: false,
    expires_at: entry.expiresAt === null ? null : new Date(entry.expiresAt).toISOString(),
  };
}

function trainingRunBody(
  call: RouteCall,
  run: ReturnType<RouteCall['state']['engine']['trainingRuns']>[number],
) {
  const checkpoints = call.state.engine.store.list(run.modelId);
  const last = (kind: SavedCheckpoint['kind']) => {
    const found = checkpoints.filter((entry) => entry.kind === kind).at(-1);
    return found ? checkpointBody(found) : null;
  };
  return {
    training_run_id: run.modelId,
    base_model: call.state.engine.baseModelName,
    model_owner: 'local',
    is_lora: true,
    corrupted: false,
    lora_rank: run.lora.rank,
    last_request_time: new Date(run.lastRequestAt).toISOString(),
    last_checkpoint: last('weights'),
    last_sampler_checkpoint: last('sampler_weights'),
    user_metadata: null,
  };
}

function findRun(call: RouteCall) {
  const run = call.state.engine.trainingRuns().find((entry) => entry.modelId === call.params.id);
  if (!run)
    throw new HttpError(
      404,
      `no training run "${call.params.id}" (training runs are the model ids of create_model, and those with checkpoints kept in --state-dir)`,
    );
  return run;
}

function listRuns(call: RouteCall): Answer {
  const runs = call.state.engine.trainingRuns();
  const offset = Math.max(0, Number(call.query.offset ?? 0) || 0);
  const limit = Math.max(1, Math.min(1000, Number(call.query.limit ?? 20) || 20));
  return {
    json: {
      training_runs: runs.slice(offset, offset + limit).map((run) => trainingRunBody(call, run)),
      cursor: { offset, limit, total_count: runs.length },
    },
  };
}

function listCheckpoints(call: RouteCall): Answer {
  findRun(call);
  return {
    json: { checkpoints: call.state.engine.store.list(call.params.id).map(checkpointBody) },
  };
}

function deleteCheckpoint(call: RouteCall): Answer {
  const { id, kind, name } = call.params;
  const weightsPath = `tinker://${id}/${kind}/${name}`;
  if (!call.state.engine.store.has(weightsPath) || !['weights', 'sampler_weights'].includes(kind!))
    throw new HttpError(404, `no checkpoint "${kind}/${name}" in training run "${id}"`);
  call.state.engine.store.delete(weightsPath);
  return { json: {} };
}

export const restRoutes: TinkerRoute[] = [
  { method: 'GET', path: routes.trainingRuns, body: 'none', idempotent: false, handle: listRuns },
  {
    method: 'GET',
    path: `${routes.trainingRuns}/:id`,
    body: 'none',
    idempotent: false,
    handle: (call) => ({ json: trainingRunBody(call, findRun(call)) }),
  },
  {
    method: 'GET',
    path: `${routes.trainingRuns}/:id/checkpoints`,
    body: 'none',
    idempotent: false,
    handle: listCheckpoints,
  },
  {
    method: 'DELETE',
    path: `${routes.trainingRuns}/:id/checkpoints/:kind/:name{.+}`,
    body: 'none',
    idempotent: false,
    handle: deleteCheckpoint,
  },
];
