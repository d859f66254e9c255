import type { ScheduleName } from './config/train-config.js';
import type { TeamBatch } from '../team/types.js';
import type { AgentUpdate, Stage, StageOutcome, UpdateOptions } from './stage.js';
import { pairedImprovement } from './certificate/paired-improvement.js';
import { resamplingRule } from './certificate/resampling.js';
import type { ResamplingDecision, UpdateRecord } from './update-record.js';
import type { TrainableUnit } from './update/units.js';

/**
 * An update schedule (docs/method.md §4): the order of sampling and updates within a stage.
 * The trainer never branches on schedule names; it asks the schedule.
 *
 * Every schedule stops at the run's token budget: once it is spent (`stage.budgetLeft` false;
 * the batch that reached it holds only the prompts it needed) the stage makes no further
 * update, and its closing batch is drawn by `stage.measure` outside the budget.
 */
export interface Schedule {
  readonly name: ScheduleName;
  /** All agents share one model (the single-agent baseline). */
  readonly sharedModel: boolean;
  runStage(stage: Stage): Promise<StageOutcome>;
}

/**
 * Updates `unit` on `batch` (stage.update), then measures the team after the update
 * (stage.measureUpdate), before anything else changes it.
 */
async function updateUnit(
  stage: Stage,
  unit: TrainableUnit,
  batch: TeamBatch,
  options?: UpdateOptions,
): Promise<AgentUpdate> {
  return stage.measureUpdate(await stage.update(unit, batch, options));
}

/** The batch after `previous`: a fresh one while the budget lasts, else one that only measures. */
async function batchAfter(
  stage: Stage,
  after: { previous: TeamBatch; changed?: TrainableUnit },
): Promise<{ batch: TeamBatch; fresh: boolean }> {
  if (!stage.budgetLeft) return { batch: await stage.measure(after), fresh: false };
  const reuse = after.changed ? { previous: after.previous, changed: after.changed } : undefined;
  return { batch: await stage.sample(reuse), fresh: true };
}

/**
 * TeamTR: each agent in turn is updated on a fresh batch from the current team (intermediate
 * occupancy). The batch after an update, on the same prompts and random streams, measures
 * that update and feeds the next one; with suffix resampling it regenerates only the turns
 * from the just-updated agent's turn on.
 */
async function freshSequentialStage(stage: Stage): Promise<StageOutcome> {
  const first = await stage.sample();
  const records = [];
  let batch = first;
  for (const unit of stage.updateOrder()) {
    const update = await updateUnit(stage, unit, batch);
    const next = await batchAfter(stage, { previous: batch, changed: unit });
    records.push(stage.record(update, pairedImprovement(batch, next.batch)));
    batch = next.batch;
    if (!next.fresh) break;
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
      await updateUnit(stage, unit, first, {
        unreflectedShifts: updates.map((update) => update.certificate.trajectoryShift),
        trajectoryWeights: weights(stage),
      }),
    );
  }
  const last = (await batchAfter(stage, { previous: first })).batch;
  return { first, last, records: updates.map((update) => stage.record(update, null)) };
}

/** HAPPO's weights: W of the units updated since `batch`, clipped to [½, 2] for their variance. */
const happoWeights = (stage: Stage, batch: TeamBatch) =>
  stage.driftSince(batch).clippedLikelihoodRatios(0.5, 2);

/**
 * Lazy resampling (ours; docs/method.md §11): sequential like TeamTR, but after each update the
 * batch in hand is kept, HAPPO-reweighted, while the stale term keeping it would add to the
 * next certificate is below this update's certificate slack (certificate/resampling.ts), and
 * a fresh batch is sampled otherwise. lazy.threshold 0 is `teamtr`, "infinity" is
 * `sequential-stale`, bit for bit.
 */
async function lazyStage(stage: Stage): Promise<StageOutcome> {
  const first = await stage.sample();
  const order = stage.updateOrder();
  const records: UpdateRecord[] = [];
  let batch = first;
  /** The updates made since `batch` was sampled. */
  let since: AgentUpdate[] = [];
  for (const [position, unit] of order.entries()) {
    const update = await updateUnit(
      stage,
      unit,
      batch,
      since.length === 0
        ? {}
        : {
            unreflectedShifts: since.map((earlier) => earlier.certificate.trajectoryShift),
            trajectoryWeights: happoWeights(stage, batch),
          },
    );
    since.push(update);
    const decision = position < order.length - 1 ? resamplingDecision(stage, update, batch) : null;
    if (decision && !decision.resampled) {
      records.push(stage.record(update, null, decision));
      continue;
    }
    // Only the suffix is new when this update was the one change since the batch in hand;
    // the batch after it then measures this update alone.
    const alone = since.length === 1;
    const next = await batchAfter(stage, { previous: batch, ...(alone ? { changed: unit } : {}) });
    records.push(
      stage.record(update, alone ? pairedImprovement(batch, next.batch) : null, decision),
    );
    batch = next.batch;
    since = [];
    if (!next.fresh) break;
  }
  return { first, last: batch, records };
}

/** What the lazy rule decides after `update` on `batch`, with the estimates it read. */
function resamplingDecision(
  stage: Stage,
  update: AgentUpdate,
  batch: TeamBatch,
): ResamplingDecision {
  const drift = stage.driftSince(batch);
  const gap = drift.gap();
  const totalVariation = gap ? gap.gap : 0;
  const { threshold } = stage.settings.lazy;
  const stepTotalVariation = update.certificate.stepTotalVariation ?? 0;
  const rule = resamplingRule({
    totalVariation,
    stepTotalVariation,
    epsilon: stage.settings.certificate.epsilon,
    surrogate: update.certificate.surrogate,
    secondOrderPenalty: update.certificate.secondOrderPenalty ?? 0,
    threshold,
  });
  return {
    resampled: rule.resample,
    totalVariation,
    totalVariationInterval: gap ? gap.interval : [0, 0],
    stepTotalVariation,
    effectiveSampleSize: drift.relativeEffectiveSampleSize(),
    staleTerm: rule.staleTerm,
    slack: rule.slack,
    threshold: threshold === Infinity ? 'infinity' : threshold,
  };
}

export const schedules: Record<ScheduleName, Schedule> = {
  teamtr: { name: 'teamtr', sharedModel: false, runStage: freshSequentialStage },
  lazy: { name: 'lazy', sharedModel: false, runStage: lazyStage },
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
