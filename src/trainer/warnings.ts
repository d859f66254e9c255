import type { TrainConfig } from './config/train-config.js';
import type { MetricsRecord, UpdateRecord } from './records.js';

/**
 * Runs that train without training: every update of a stage left the weights as they were
 * (its token KL is exactly 0). A run of such stages "finishes" with no out-of-region updates and
 * exit 0, so the trainer says so during the run and in the summary, with the likely cause.
 */
export function stageHadNoEffect(updates: readonly UpdateRecord[]): boolean {
  return updates.length > 0 && updates.every((update) => update.kl === 0);
}

/** Why a stage's updates changed nothing, and which setting to change (each cause once). */
export function noEffectCause(
  config: TrainConfig,
  updates: readonly UpdateRecord[],
  runDirectory: string,
): string {
  return [...new Set(updates.map((update) => idleUpdateCause(config, update, runDirectory)))].join(
    '; ',
  );
}

/**
 * Why one update changed no weights, read from its record: its step was undone, it had no
 * tokens, dynamic sampling dropped every group, or every advantage was 0 because the rewards
 * gave nothing to compare (all 0, all equal, or equal within every prompt group).
 */
function idleUpdateCause(config: TrainConfig, update: UpdateRecord, runDirectory: string): string {
  if (update.stepsTaken > 0 && update.lastStepScale === 0) return undoneCause(config);
  if (update.tokens === 0)
    return `agent ${update.agent} had no tokens in the batch (it spoke no turn, or every turn was empty): check protocol.turnOrder and the agents' turn limits (agents[].maxTurnTokens, protocol.maxTurnTokens)`;
  const rewardsEqual = update.batchRewardStandardError === 0;
  if (rewardsEqual && update.batchRewardMean === 0)
    return `every reward was 0, so every advantage was 0 and there was nothing to learn from: check the task's verifier or reward function, the answer format it expects against what the agents write, and the transcripts (teamtr samples ${runDirectory})`;
  if (rewardsEqual)
    return `every trajectory got the same reward (${update.batchRewardMean}), so every advantage was 0: check that the verifier or reward function tells answers apart, and the transcripts (teamtr samples ${runDirectory})`;
  if (update.droppedGroups > 0 && update.droppedGroups >= config.rollout.problemsPerBatch)
    return `dynamic sampling dropped every prompt group (the rewards within each group were equal), so no trajectory was left to learn from: raise rollout.groupSize, or turn off objective.dynamicSampling`;
  return `within every prompt group the rewards were equal, so every group-relative advantage was 0: raise rollout.groupSize or rollout.temperature for more varied answers, and read the transcripts (teamtr samples ${runDirectory})`;
}

function undoneCause(config: TrainConfig): string {
  const { learningRate, weightDecay } = config.optimizer;
  const settings = [
    `optimizer.learningRate = ${learningRate}`,
    ...(weightDecay > 0 ? [`optimizer.weightDecay = ${weightDecay}`] : []),
    ...(config.agents ?? [])
      .filter((agent) => agent.learningRate !== undefined)
      .map((agent) => `agents[${agent.name}].learningRate = ${agent.learningRate}`),
  ];
  return `every update was undone: each agent's first step already left its trust region, so no weights changed. Likely cause: a step too large for trustRegion.delta = ${config.trustRegion.delta} (${settings.join(', ')}); lower the learning rate (1e-4 is the default) or raise delta`;
}
/** Warnings for the summary: stages whose updates had no effect, and why. */
export function runWarnings(
  config: TrainConfig,
  records: readonly MetricsRecord[],
  runDirectory: string,
): string[] {
  const byStage = new Map<number, UpdateRecord[]>();
  for (const record of records)
    if (record.type === 'update')
      byStage.set(record.stage, [...(byStage.get(record.stage) ?? []), record]);
  const idle = [...byStage.entries()].filter(([, updates]) => stageHadNoEffect(updates));
  if (idle.length === 0) return [];
  const causes = new Set(idle.map(([, updates]) => noEffectCause(config, updates, runDirectory)));
  return [...causes].map(
    (cause) =>
      `${idle.length} of ${byStage.size} stages changed no weights (${idle.length === byStage.size ? 'all of them' : `first: stage ${idle[0]![0]}`}): ${cause}`,
  );
}
