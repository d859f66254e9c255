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

/** Why a stage's updates changed nothing, and which setting to change. */
export function noEffectCause(config: TrainConfig, updates: readonly UpdateRecord[]): string {
  const undone = updates.every((update) => update.stepsTaken > 0 && update.lastStepScale === 0);
  if (!undone)
    return "no update had a step to take (no tokens of the agent in the batch, or every prompt group dropped by dynamic sampling); check rollout.groupSize, objective.dynamicSampling and the agents' turns";
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
export function runWarnings(config: TrainConfig, records: readonly MetricsRecord[]): string[] {
  const byStage = new Map<number, UpdateRecord[]>();
  for (const record of records)
    if (record.type === 'update')
      byStage.set(record.stage, [...(byStage.get(record.stage) ?? []), record]);
  const idle = [...byStage.entries()].filter(([, updates]) => stageHadNoEffect(updates));
  if (idle.length === 0) return [];
  const causes = new Set(idle.map(([, updates]) => noEffectCause(config, updates)));
  return [...causes].map(
    (cause) =>
      `${idle.length} of ${byStage.size} stages changed no weights (${idle.length === byStage.size ? 'all of them' : `first: stage ${idle[0]![0]}`}): ${cause}`,
  );
}
