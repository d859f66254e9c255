import path from 'node:path';
import { TeamtrError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import { resolveRunTask } from './setup/task-source.js';
import { swapConfigSchema, trainConfigSchema, type SwapConfig } from './config/train-config.js';
import { HeldRun } from './run/run-directory.js';
import { schedules } from './schedules.js';
import { validateSwaps } from './swap/swap-plan.js';

export interface SwapRequest {
  runDirectory: string;
  agent: string;
  model: string;
  rolePrompt?: string;
  learningRate?: number;
  measureProblems?: number;
  alignment?: {
    steps?: number;
    mode?: string;
    learningRate?: number;
    warmupSteps?: number;
    minibatches?: number;
    epochs?: number;
  };
}

export interface ScheduledSwap {
  runDirectory: string;
  /** The swap as written to config.json (it happens right before this stage runs). */
  swap: SwapConfig;
  /** The stage of the checkpoint the next `train --resume` continues from. */
  checkpointStage: number;
}

/**
 * Schedules a swap on an existing run at the stage after its checkpoint, by rewriting the run's
 * config.json atomically once every check passed; `teamtr train --resume` applies it. The run
 * is held meanwhile (a trainer at work on it refuses the swap). On any error the run directory
 * is left exactly as it was.
 */
export async function scheduleSwap(request: SwapRequest): Promise<ScheduledSwap> {
  const run = await HeldRun.open(request.runDirectory);
  try {
    return await scheduleOnHeldRun(run, request);
  } finally {
    run.release();
  }
}

async function scheduleOnHeldRun(run: HeldRun, request: SwapRequest): Promise<ScheduledSwap> {
  const configPath = path.join(request.runDirectory, 'config.json');
  const config = parseWithSchema(trainConfigSchema, await run.readConfig(), configPath);
  const state = await run.readCheckpointState();
  if (!state)
    throw new TeamtrError(
      `${request.runDirectory} has no checkpoint yet; a swap is applied when a run resumes from one`,
    );
  const budgetSpent =
    state.generatedTokens >= config.budget.generatedTokens ||
    (config.budget.maxStages !== undefined && state.stage >= config.budget.maxStages);
  if (budgetSpent)
    throw new TeamtrError(
      `${request.runDirectory} has spent its budget (stage ${state.stage}, ${state.generatedTokens} generated tokens), so a swap would never run; start a new run with a \`swaps\` entry in its config`,
    );
  const model = request.model.startsWith('builtin:') ? request.model : path.resolve(request.model);
  const swap = parseWithSchema(
    swapConfigSchema,
    {
      stage: state.stage + 1,
      agent: request.agent,
      model,
      ...(request.rolePrompt !== undefined ? { rolePrompt: request.rolePrompt } : {}),
      ...(request.learningRate !== undefined ? { learningRate: request.learningRate } : {}),
      ...(request.measureProblems !== undefined
        ? { measureProblems: request.measureProblems }
        : {}),
      alignment: Object.fromEntries(
        Object.entries(request.alignment ?? {}).filter(([, value]) => value !== undefined),
      ),
    },
    'swap',
  );
  const updated = parseWithSchema(
    trainConfigSchema,
    { ...config, swaps: [...config.swaps, swap] },
    configPath,
  );
  const task = await resolveRunTask(updated, undefined);
  await validateSwaps(updated, task, {
    completedStage: state.stage,
    applied: state.swaps.applied,
    sharedModel: schedules[updated.schedule].sharedModel,
  });
  await run.writeConfig(updated);
  return { runDirectory: request.runDirectory, swap, checkpointStage: state.stage };
}
