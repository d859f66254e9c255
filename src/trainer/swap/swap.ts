import { meanWithStandardError } from '../../rl/index.js';
import type { LoadedModel } from '../../models/load.js';
import type { Task } from '../../tasks/index.js';
import { rollout } from '../../team/rollout.js';
import { firstTurnOf, hasSeveralRounds, type Agent, type Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import { RandomGenerator } from '../../util/random.js';
import { alignNewcomer, type AlignmentOptions, type AlignmentResult } from './alignment.js';
import { agentFromConfig, loadAgentModel, type BuiltTeam } from '../build/build-team.js';
import type { AgentConfig, SwapConfig, TrainConfig } from '../config/train-config.js';
import type { MetricsRecord, StageRecord, SwapRecord, SwapRecoveryRecord } from '../records.js';
import type { RunState } from '../run/run-state.js';
import { pairedImprovement } from '../stage.js';
import type { StageHook } from '../stage-hooks.js';
import { agentConfigsAtStage, swappedAgentConfig } from './swap-plan.js';
import { buildUnit } from '../update/units.js';

/**
 * Plug-and-play replacement (docs/method.md §6), applied by the trainer right before a stage runs:
 *
 * 1. a batch from the current team measures the reward just before the swap;
 * 2. the incoming model takes the agent's place (its other agents keep weights, optimizer
 *    state and history untouched); a batch of the same prompts with common random numbers
 *    measures the reward right after it (the swap shock, paired);
 * 3. optional stage-0 alignment fits the newcomer to the outgoing agent's turns (alignment.ts),
 *    and a third paired batch measures the reward after it;
 * 4. the swapped unit gets the new model and a fresh optimizer; TeamTR resumes.
 *
 * All randomness derives from (seed, stage, 'swap'), so a resumed run repeats the swap bit for
 * bit. The swap's batches count towards the generated-token budget.
 */

/** What a swap changes: the trainer's team, units and checkpoint tokenizers. */
export interface SwapTarget {
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
  /** Tokenizer JSON saved with each unit's checkpoint. */
  tokenizers: Map<string, unknown>;
}

export interface AppliedSwap {
  record: SwapRecord;
  alignment: AlignmentResult | null;
}

/**
 * Swaps as the run loop sees them: due swaps are applied before a stage (their records come
 * first), and after each stage the swaps whose team reward came back are recorded.
 */
export function swapHook(target: SwapTarget, onSwap: (record: SwapRecord) => void): StageHook {
  return {
    async beforeStage(state: RunState): Promise<MetricsRecord[]> {
      const applied = await applyDueSwaps(target, state);
      applied.forEach((swap) => onSwap(swap.record));
      return applied.map((swap) => swap.record);
    },
    afterStage: recoveryRecords,
  };
}

/** Applies every swap scheduled right before stage `state.stage + 1` and not yet applied. */
export async function applyDueSwaps(target: SwapTarget, state: RunState): Promise<AppliedSwap[]> {
  if (!target.config.swaps.some((swap) => swap.stage === state.stage + 1)) return [];
  const progress = state.swaps;
  const results: AppliedSwap[] = [];
  for (const [index, swap] of target.config.swaps.entries()) {
    if (swap.stage !== state.stage + 1 || progress.applied.some((entry) => entry.index === index))
      continue;
    const result = await applySwap(target, swap, state);
    progress.applied.push({ index, stage: swap.stage, agent: swap.agent, model: swap.model });
    progress.pendingRecovery.push({
      agent: swap.agent,
      swapStage: swap.stage,
      threshold: result.record.recoveryThreshold,
    });
    results.push(result);
  }
  return results;
}

/** Replaces one agent's model now (see the file comment); advances state.generatedTokens. */
export async function applySwap(
  target: SwapTarget,
  swap: SwapConfig,
  state: RunState,
): Promise<AppliedSwap> {
  const { config, task, built } = target;
  const team = built.team;
  const agentIndex = team.agents.findIndex((agent) => agent.name === swap.agent);
  const ownUnit = built.units.some(
    (candidate) => candidate.name === swap.agent && candidate.agentIndices.length === 1,
  );
  if (agentIndex < 0 || !ownUnit)
    throw new Error(
      `swap: agent "${swap.agent}" has no update unit of its own (validateSwaps refuses this)`,
    );
  const outgoingConfig = agentConfigsAtStage(config, task, swap.stage - 1)[agentIndex]!;
  const incomingConfig = swappedAgentConfig(outgoingConfig, swap);
  // Loaded as buildTeam loads it (adapters included), so a team rebuilt on resume is the same.
  const incoming = (await loadAgentModel(incomingConfig, config.seed, built.sharedBases))!;
  const newcomer = agentFromConfig({
    agentConfig: incomingConfig,
    index: agentIndex,
    loaded: incoming,
    task,
  });
  const seed = `${config.seed}/stage/${swap.stage}/swap`;
  const problems = task.split('train', {
    seed: new RandomGenerator(seed).nextUint32(),
    count: swap.measureProblems ?? config.rollout.problemsPerBatch,
  });
  const swappedTeam: Team = {
    ...team,
    agents: team.agents.map((agent, index) => (index === agentIndex ? newcomer : agent)),
  };
  const measure = (team: Team, previous?: TeamBatch) =>
    measurementBatch(config, task, team, problems, `${seed}/measure`, previous, agentIndex);
  const before = await measure(team);
  const afterSwap = await measure(swappedTeam, before);
  const alignment =
    swap.alignment.steps > 0
      ? await alignNewcomer(alignmentOptions(target, swap, { agentIndex, newcomer, seed }))
      : null;
  const afterAlignment = alignment ? await measure(swappedTeam, before) : null;
  commitSwap(target, { agentIndex, agentConfig: incomingConfig, newcomer, incoming });
  const record = swapRecord({
    swap,
    state,
    outgoingModel: outgoingConfig.model ?? 'remote endpoint',
    before,
    afterSwap,
    afterAlignment,
    alignment,
  });
  state.generatedTokens += record.swapTokens;
  return { record, alignment };
}

/** Stage-0 alignment of the newcomer to the role, under the swap's and the run's settings. */
function alignmentOptions(
  target: SwapTarget,
  swap: SwapConfig,
  place: { agentIndex: number; newcomer: Agent; seed: string },
): AlignmentOptions {
  const { config } = target;
  return {
    team: target.built.team,
    task: target.task,
    agentIndex: place.agentIndex,
    newcomer: place.newcomer,
    temperature: config.rollout.temperature,
    settings: {
      ...swap.alignment,
      problemsPerBatch: swap.alignment.problemsPerBatch ?? config.rollout.problemsPerBatch,
      groupSize: swap.alignment.groupSize ?? config.rollout.groupSize,
    },
    beta1: config.optimizer.beta1,
    beta2: config.optimizer.beta2,
    seed: `${place.seed}/align`,
  };
}

/**
 * A batch of the measurement prompts. After the swap only the swapped agent changed, so with a
 * single-round fixed order the turns before its first turn are reused (suffix resampling).
 */
async function measurementBatch(
  config: TrainConfig,
  task: Task,
  team: Team,
  problems: TeamBatch['problems'],
  seed: string,
  previous: TeamBatch | undefined,
  agentIndex: number,
): Promise<TeamBatch> {
  const { protocol } = team;
  const fromTurn = firstTurnOf(protocol, agentIndex);
  const reusable =
    previous &&
    config.rollout.suffixResampling &&
    !hasSeveralRounds(protocol) &&
    !protocol.permutePerEpisode &&
    fromTurn >= 0;
  return rollout({
    team,
    task,
    problems,
    groupSize: config.rollout.groupSize,
    seed,
    temperature: config.rollout.temperature,
    reuse: reusable ? { previous, fromTurn } : undefined,
  });
}

/** Puts the newcomer in the team, and a unit for its model (fresh optimizer) in the agent's. */
function commitSwap(
  target: SwapTarget,
  swapped: { agentIndex: number; agentConfig: AgentConfig; newcomer: Agent; incoming: LoadedModel },
): void {
  const { built, config } = target;
  const { agentIndex, incoming } = swapped;
  const unitIndex = built.units.findIndex((unit) => unit.name === swapped.newcomer.name);
  built.team.agents[agentIndex] = swapped.newcomer;
  built.models[agentIndex] = incoming;
  const outgoing = built.units[unitIndex]!;
  if (outgoing.kind !== 'tinker') outgoing.model.destroy();
  built.units[unitIndex] = buildUnit({
    agentConfig: swapped.agentConfig,
    loaded: incoming,
    agentIndices: [agentIndex],
    config,
  });
  target.tokenizers.set(swapped.newcomer.name, incoming.tokenizer.toJSON());
}

function swapRecord(options: {
  swap: SwapConfig;
  state: RunState;
  outgoingModel: string;
  before: TeamBatch;
  afterSwap: TeamBatch;
  afterAlignment: TeamBatch | null;
  alignment: AlignmentResult | null;
}): SwapRecord {
  const { swap, alignment } = options;
  const rewards = (batch: TeamBatch) => {
    const estimate = meanWithStandardError(
      batch.trajectories.map((trajectory) => trajectory.reward),
    );
    return {
      mean: estimate.mean,
      standardError: Number.isFinite(estimate.standardError) ? estimate.standardError : 0,
    };
  };
  const before = rewards(options.before);
  const afterSwap = rewards(options.afterSwap);
  const afterAlignment = options.afterAlignment ? rewards(options.afterAlignment) : null;
  const shock = pairedImprovement(options.before, options.afterSwap);
  return {
    type: 'swap',
    stage: swap.stage,
    generatedTokens: options.state.generatedTokens,
    agent: swap.agent,
    fromModel: options.outgoingModel,
    toModel: swap.model,
    rewardBefore: before.mean,
    rewardBeforeStandardError: before.standardError,
    rewardAfterSwap: afterSwap.mean,
    rewardAfterSwapStandardError: afterSwap.standardError,
    rewardAfterAlignment: afterAlignment?.mean ?? null,
    rewardAfterAlignmentStandardError: afterAlignment?.standardError ?? null,
    shock: shock.improvement,
    shockStandardError: shock.standardError,
    alignmentSteps: alignment?.steps ?? 0,
    alignmentMode: alignment ? alignment.mode : 'none',
    alignmentNote: alignment?.note ?? null,
    alignmentLossFirst: alignment?.losses[0] ?? null,
    alignmentLossLast: alignment?.losses[alignment.losses.length - 1] ?? null,
    alignmentTokens: alignment?.generatedTokens ?? 0,
    // Measurement batches and alignment together.
    swapTokens:
      options.before.generatedTokens +
      options.afterSwap.generatedTokens +
      (alignment?.generatedTokens ?? 0) +
      (options.afterAlignment?.generatedTokens ?? 0),
    recoveryThreshold: before.mean - before.standardError,
  };
}

/**
 * After a stage: swaps whose team reward came back. The first stage whose rewardAfter reaches
 * the pre-swap reward minus its standard error recovers the swap; it is recorded once.
 */
export function recoveryRecords(state: RunState, stage: StageRecord): SwapRecoveryRecord[] {
  const progress = state.swaps;
  const recovered = progress.pendingRecovery.filter(
    (pending) => pending.swapStage <= stage.stage && stage.rewardAfter >= pending.threshold,
  );
  progress.pendingRecovery = progress.pendingRecovery.filter(
    (pending) => !recovered.includes(pending),
  );
  return recovered.map((pending) => ({
    type: 'swap-recovery',
    stage: stage.stage,
    generatedTokens: stage.generatedTokens,
    agent: pending.agent,
    swapStage: pending.swapStage,
    stagesToRecover: stage.stage - pending.swapStage + 1,
    threshold: pending.threshold,
    rewardAfter: stage.rewardAfter,
  }));
}
