import { trainConfigSchema, type ScheduleName } from '../../trainer/config/train-config.js';
import type {
  EvaluationRecord,
  MetricsRecord,
  RankShiftSummary,
  StageRecord,
  UpdateRecord,
} from '../../trainer/records.js';
import { holdRun } from '../../trainer/run/run-lock.js';
import { RunDirectory } from '../../trainer/run/run-directory.js';
import { RandomGenerator } from '../../util/random.js';

/**
 * Run directories written through the trainer's own RunDirectory with made-up but plausible
 * records, for tests that need every kind of value a real run can hold (out-of-region updates,
 * regressions, null measured improvements and occupancy gaps) without training for minutes.
 */
export interface SyntheticRunOptions {
  schedule?: ScheduleName;
  seed?: number;
  stages?: number;
  agents?: readonly string[];
  /** Every this many updates one ends out of the trust region. @default 4 */
  outOfRegionEvery?: number;
  /** Stages whose reward drops beyond noise. @default [3] */
  regressionStages?: readonly number[];
}

const delta = 0.01;
const rankBuckets: Array<[number, number]> = [
  [1, 1],
  [2, 2],
  [3, 3],
  [4, 5],
  [6, 10],
  [11, 100],
];

function rankShift(inRegion: boolean, random: RandomGenerator): RankShiftSummary[] {
  const top = (inRegion ? 0.01 : 0.06) * (0.7 + 0.6 * random.nextDouble());
  const shares = [0, 0.35, 0.25, 0.2, 0.12, 0.08];
  return rankBuckets.map(([lowestRank, highestRank], index) => {
    const mass = index === 0 ? top : -top * shares[index]!;
    return {
      lowestRank,
      highestRank,
      meanShift: mass / (highestRank - lowestRank + 1),
      massShiftPerPosition: mass,
    };
  });
}

function updateRecord(fields: {
  stage: number;
  updateIndex: number;
  globalUpdate: number;
  schedule: string;
  agent: string;
  generatedTokens: number;
  reward: number;
  outOfRegion: boolean;
  measured: boolean;
  random: RandomGenerator;
}): UpdateRecord {
  const { random } = fields;
  const kl = fields.outOfRegion
    ? delta * (1.2 + 0.5 * random.nextDouble())
    : delta * (0.15 + 0.7 * random.nextDouble());
  const certificate = 0.004 * (random.nextDouble() - 0.3);
  const gap =
    fields.updateIndex === 0
      ? null
      : 0.015 * fields.updateIndex * (0.8 + 0.4 * random.nextDouble());
  return {
    type: 'update',
    stage: fields.stage,
    updateIndex: fields.updateIndex,
    globalUpdate: fields.globalUpdate,
    schedule: fields.schedule,
    agent: fields.agent,
    generatedTokens: fields.generatedTokens,
    batchRewardMean: fields.reward,
    batchRewardStandardError: 0.03,
    resampledFromTurn: fields.updateIndex === 0 ? 0 : 3 - fields.updateIndex,
    delta,
    kl,
    maxTokenKl: kl * 4,
    inRegion: !fields.outOfRegion,
    stepsTaken: 4,
    stepsUndone: fields.outOfRegion ? 1 : 0,
    lastStepScale: fields.outOfRegion ? 0.5 : 1,
    loss: -0.01,
    clipFraction: 0.05,
    gradientNorm: 0.8,
    tokens: 400,
    droppedGroups: 0,
    surrogate: certificate + 0.002,
    surrogateStandardError: 0.001,
    penalty: 0.002,
    stalePenalty: 0,
    certificate,
    trajectoryShift: 0.05,
    offPolicyEstimate: certificate,
    offPolicyStandardError: 0.002,
    offPolicyLowerBound: certificate - 0.004,
    occupancyGap: gap,
    occupancyGapStandardError: gap === null ? null : gap / 10,
    measuredImprovement: fields.measured ? certificate + 0.01 * random.nextDouble() : null,
    measuredImprovementStandardError: fields.measured ? 0.01 : null,
    heldOutImprovement: fields.measured ? certificate + 0.003 : null,
    heldOutImprovementStandardError: fields.measured ? 0.02 : null,
    probabilityShiftByRank: rankShift(!fields.outOfRegion, random),
  };
}

function evaluationRecord(
  stage: number,
  generatedTokens: number,
  accuracy: number,
  agents: readonly string[],
): EvaluationRecord {
  return {
    type: 'eval',
    stage,
    generatedTokens,
    accuracy,
    interval: [Math.max(0, accuracy - 0.05), Math.min(1, accuracy + 0.05)],
    count: 200,
    meanReward: accuracy,
    agents: agents.map((agent) => ({ agent, turnAccuracy: accuracy, interval: null, count: 200 })),
  };
}

/** The records of a made-up run, stage by stage, in the order the trainer writes them. */
export function syntheticRecords(options: SyntheticRunOptions = {}): MetricsRecord[] {
  const schedule = options.schedule ?? 'teamtr';
  const agents = options.agents ?? ['solver', 'checker', 'finisher'];
  const stages = options.stages ?? 4;
  const outOfRegionEvery = options.outOfRegionEvery ?? 4;
  const regressionStages = new Set(options.regressionStages ?? [3]);
  const random = new RandomGenerator(`synthetic/${schedule}/${options.seed ?? 0}`);
  const records: MetricsRecord[] = [evaluationRecord(0, 0, 0.3, agents)];
  let tokens = 0;
  let updates = 0;
  let reward = 0.3;
  for (let stage = 1; stage <= stages; stage++) {
    const before = reward;
    const updatesBefore = updates;
    const regressed = regressionStages.has(stage);
    [...agents].reverse().forEach((agent, updateIndex) => {
      tokens += 900;
      reward += regressed ? -0.04 : 0.015 * random.nextDouble();
      records.push(
        updateRecord({
          stage,
          updateIndex,
          globalUpdate: updates,
          schedule,
          agent,
          generatedTokens: tokens,
          reward,
          outOfRegion: (updates + 1) % outOfRegionEvery === 0,
          measured: updateIndex < agents.length - 1,
          random,
        }),
      );
      updates++;
    });
    const stageRecord: StageRecord = {
      type: 'stage',
      stage,
      schedule,
      generatedTokens: tokens,
      elapsedSeconds: 1.5,
      rewardBefore: before,
      rewardAfter: reward,
      improvement: reward - before,
      improvementStandardError: 0.02,
      regression: regressed,
      certificateSum: 0.004,
      updates: agents.length,
      outOfRegion: records.filter(
        (record) =>
          record.type === 'update' && record.globalUpdate >= updatesBefore && !record.inRegion,
      ).length,
      measurementTokens: 0,
    };
    records.push(stageRecord);
    if (stage % 2 === 0 || stage === stages)
      records.push(evaluationRecord(stage, tokens, Math.min(1, reward), agents));
  }
  return records;
}

/**
 * Writes a run directory (marker, config, metrics.jsonl; summary.json unless `running`, and
 * then running.json naming this process, as a trainer at work holds it).
 */
export async function writeSyntheticRun(
  directory: string,
  options: SyntheticRunOptions & { running?: boolean } = {},
): Promise<{ run: RunDirectory; records: MetricsRecord[] }> {
  const agents = options.agents ?? ['solver', 'checker', 'finisher'];
  const config = trainConfigSchema.parse({
    schedule: options.schedule ?? 'teamtr',
    seed: options.seed ?? 0,
    agents: agents.map((name, role) => ({ name, model: `builtin:arithmetic-chain/role-${role}` })),
    budget: { generatedTokens: 20_000 },
  });
  const run = await RunDirectory.create(directory, config);
  const records = syntheticRecords(options);
  run.appendMetrics(records);
  if (options.running) await holdRun(directory);
  else {
    await run.writeSummary({
      runDirectory: directory,
      schedule: config.schedule,
      seed: config.seed,
      interrupted: false,
    });
  }
  return { run, records };
}
