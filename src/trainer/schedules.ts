import type { ScheduleName } from './config/train-config.js';
import type { AgentUpdate, Stage, StageOutcome } from './stage.js';
import { pairedImprovement } from './certificate/paired-improvement.js';

/**
 * An update schedule (docs/method.md §4): the order of sampling and updates within a stage.
 * The trainer never branches on schedule names; it asks the schedule.
 */
export interface Schedule {
  readonly name: ScheduleName;
  /** All agents share one model (the single-agent baseline). */
  readonly sharedModel: boolean;
  runStage(stage: Stage): Promise<StageOutcome>;
}

/**
 * TeamTR: each agent in turn is updated on a fresh batch from the current team (intermediate
 * occupancy). The batch after an update, on the same prompts and random streams, measures
 * that update and feeds the next one; with suffix resampling it regenerates only the turns
 * from the just-updated agent's turn on.
 */
async function freshSequentialStage(stage: Stage): Promise<StageOutcome> {
  const order = stage.updateOrder();
  const first = await stage.sample();
  const records = [];
  let batch = first;
  for (const unit of order) {
    const update = await stage.update(unit, batch);
    const next = await stage.sample({ previous: batch, changed: unit });
    records.push(stage.record(update, pairedImprovement(batch, next)));
    batch = next;
  }
  return { first, last: batch, records };
}

/**
 * One batch sampled at the start of the stage serves every update (stale occupancy). Each
 * certificate pays for the shift of the units stepped before it, which this batch does not
 * reflect; `weights` may reweight the batch for the unit about to be updated.
 */
async function staleBatchStage(
  stage: Stage,
  weights: (stage: Stage) => Float64Array | undefined,
): Promise<StageOutcome> {
  const first = await stage.sample();
  const updates: AgentUpdate[] = [];
  for (const unit of stage.updateOrder()) {
    updates.push(
      await stage.update(unit, first, {
        unreflectedShifts: updates.map((update) => update.certificate.trajectoryShift),
        trajectoryWeights: weights(stage),
      }),
    );
  }
  const last = await stage.sample();
  return { first, last, records: updates.map((update) => stage.record(update, null)) };
}

export const schedules: Record<ScheduleName, Schedule> = {
  teamtr: { name: 'teamtr', sharedModel: false, runStage: freshSequentialStage },
  // HAPPO-style: sequential on the stale batch, each agent weighting its trajectories by the
  // likelihood ratio W_{<i} of the agents updated before it (clipped to [1/2, 2] for variance),
  // so it answers its predecessors' new policies, but on contexts they no longer produce.
  'sequential-stale': {
    name: 'sequential-stale',
    sharedModel: false,
    runStage: (stage) =>
      staleBatchStage(stage, (current) => current.occupancy.clippedLikelihoodRatios(0.5, 2)),
  },
  // MAPPO-style: every agent steps from the start-of-stage batch. Parameters are disjoint, so
  // applying the steps one after another equals applying them at once.
  joint: {
    name: 'joint',
    sharedModel: false,
    runStage: (stage) => staleBatchStage(stage, () => undefined),
  },
  // One model plays every role: a single unit, on a fresh batch.
  single: { name: 'single', sharedModel: true, runStage: freshSequentialStage },
};
