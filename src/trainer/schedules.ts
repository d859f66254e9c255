import type { TeamBatch } from '../team/types.js';
import type { ScheduleName } from './config.js';
import type { StageRunner } from './stage.js';

export interface StageOutcome {
  /** The stage's first batch (the team before any update of the stage). */
  first: TeamBatch;
  /** A batch on the same prompts from the team after the stage. */
  last: TeamBatch;
}

/**
 * An update schedule (TEAMTR.md §4): the order of sampling and updates within a stage.
 * The trainer never branches on schedule names; it asks the schedule.
 */
export interface Schedule {
  readonly name: ScheduleName;
  /** All agents share one model (the single-agent baseline). */
  readonly sharedModel: boolean;
  runStage(runner: StageRunner): Promise<StageOutcome>;
}

/**
 * TeamTR: sequential updates, each on a fresh batch from the current team (intermediate
 * occupancy). Consecutive batches share prompts and random streams; the change in their mean
 * reward is the measured improvement of the update in between. With suffix resampling only
 * the turns from the just-updated agent's turn on are regenerated.
 */
async function freshSequentialStage(runner: StageRunner): Promise<StageOutcome> {
  const order = runner.orderedUnits();
  let batch = await runner.sample();
  const first = batch;
  for (const [index, unit] of order.entries()) {
    if (index > 0) {
      const next = await runner.sample({ previous: batch, changed: order[index - 1]! });
      runner.measure(runner.records[index - 1]!, batch, next);
      batch = next;
    }
    runner.update(unit, batch, { stale: false });
  }
  const last = await runner.sample({ previous: batch, changed: order[order.length - 1]! });
  runner.measure(runner.records[runner.records.length - 1]!, batch, last);
  return { first, last };
}

/**
 * One batch sampled at the start of the stage, reused for every update. Sequentially (as in
 * HAPPO), each later agent weights the stale batch by the earlier agents' likelihood ratio, so
 * it responds to their new policies but on contexts they no longer produce (stale occupancy).
 * Jointly, every agent steps from the start-of-stage team at once (as in MAPPO).
 */
function staleBatchStage(sequential: boolean) {
  return async (runner: StageRunner): Promise<StageOutcome> => {
    const first = await runner.sample();
    for (const unit of runner.orderedUnits())
      runner.update(unit, first, { stale: true, correctForEarlierAgents: sequential });
    const last = await runner.sample();
    return { first, last };
  };
}

export const schedules: Record<ScheduleName, Schedule> = {
  teamtr: { name: 'teamtr', sharedModel: false, runStage: freshSequentialStage },
  'sequential-stale': {
    name: 'sequential-stale',
    sharedModel: false,
    runStage: staleBatchStage(true),
  },
  // Every agent's step is computed from the same start-of-stage batch; parameters are disjoint,
  // so applying them one after another equals applying them at once. The certificate counts the
  // agents stepped before each one, as for sequential-stale.
  joint: { name: 'joint', sharedModel: false, runStage: staleBatchStage(false) },
  // One model plays every role: a single update unit, on a fresh batch.
  single: { name: 'single', sharedModel: true, runStage: freshSequentialStage },
};
