import { stageRegressed } from '../rl/index.js';
import type { Problem, Task } from '../tasks/index.js';
import type { TeamBatch } from '../team/types.js';
import { RandomGenerator } from '../util/random.js';
import { pairedImprovement } from './certificate/paired-improvement.js';
import {
  evaluationMarks,
  type EvaluationContext,
  type EvaluationRecord,
  type RunPosition,
} from './evaluations.js';
import type { BuiltTeam } from './setup/build-team.js';
import type { TrainConfig } from './config/train-config.js';
import type { RunState } from './run/run-state.js';
import { schedules } from './schedules.js';
import { Stage, type StageSettings } from './stage.js';
import type { UpdateRecord } from './update-record.js';

/** What running a stage reads of the run (its RunContext). */
export interface StageContext {
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
  settings: StageSettings;
  /** The held-out problems evaluations run on. */
  evalProblems: Problem[];
}

/** One stage as metrics.jsonl records it (runStage). */
export interface StageRecord {
  type: 'stage';
  stage: number;
  schedule: string;
  generatedTokens: number;
  elapsedSeconds: number;
  rewardBefore: number;
  rewardAfter: number;
  improvement: number;
  improvementStandardError: number;
  /** A drop of the team reward beyond noise (z < −2). */
  regression: boolean;
  certificateSum: number;
  updates: number;
  outOfRegion: number;
  /**
   * Tokens generated only to measure (not in the training budget): updates on held-out
   * prompts, and the closing batch of a stage the budget cut short.
   */
  measurementTokens: number;
  /**
   * The run's token budget was reached in this stage: its last batch may hold fewer prompts
   * (see its updates' batchPrompts) and it may make fewer updates than a full stage. Absent
   * in older runs.
   */
  budgetReached?: boolean;
}

/** The evaluation settings of a run, for evaluationRecord. */
export function evaluationContext(context: StageContext): EvaluationContext {
  return {
    team: context.built.team,
    task: context.task,
    problems: context.evalProblems,
    temperature: context.config.evaluation.temperature,
    seed: context.config.seed,
  };
}

/** Where the run stands after `state`'s last stage. */
export function runPosition(state: RunState): RunPosition {
  return { stage: state.stage, generatedTokens: state.generatedTokens, updates: state.updates };
}

/**
 * Runs stage `state.stage` under the run's schedule; advances the token and update counts.
 * `evaluations` are those taken inside the stage (at update and token marks); `updates` and
 * them are in the order they happened. Returns the stage's last batch too (the team after the
 * stage: its transcripts).
 */
export async function runStage(
  context: StageContext,
  state: RunState,
): Promise<{
  updates: UpdateRecord[];
  evaluations: EvaluationRecord[];
  stageRecord: StageRecord;
  last: TeamBatch;
}> {
  const { config, task, built } = context;
  const started = Date.now();
  const seed = `${config.seed}/stage/${state.stage}`;
  const problems = task.split('train', {
    seed: new RandomGenerator(seed).nextUint32(),
    count: config.rollout.problemsPerBatch,
  });
  const { everyUpdates, everyTokens } = config.evaluation;
  const marks = evaluationMarks(evaluationContext(context), {
    stage: state.stage,
    everyUpdates,
    everyTokens,
    tokenBudget: config.budget.generatedTokens,
  });
  const plan = {
    stage: state.stage,
    seed,
    problems,
    heldOutProblems: heldOutProblems(context, seed, problems),
    tokensBefore: state.generatedTokens,
    updatesBefore: state.updates,
    tokenBudget: config.budget.generatedTokens,
    watch: marks,
  };
  const stage = new Stage(plan, built.team, task, built.units, context.settings);
  const { first, last, records } = await schedules[config.schedule].runStage(stage);
  state.generatedTokens += stage.generatedTokens;
  state.updates += records.length;
  const change = pairedImprovement(first, last);
  const stageRecord: StageRecord = {
    type: 'stage',
    stage: state.stage,
    schedule: config.schedule,
    generatedTokens: state.generatedTokens,
    elapsedSeconds: (Date.now() - started) / 1000,
    rewardBefore: meanReward(first),
    rewardAfter: meanReward(last),
    improvement: change.improvement,
    improvementStandardError: change.standardError,
    regression: stageRegressed(change),
    certificateSum: records.reduce((total, record) => total + record.certificate, 0),
    updates: records.length,
    outOfRegion: records.filter((record) => !record.inRegion).length,
    measurementTokens: stage.measurementTokens,
    budgetReached: stage.budgetReached,
  };
  return { updates: records, evaluations: marks.records, stageRecord, last };
}

/**
 * The stage's held-out prompts: training problems other than the stage's own (neither the same
 * problem nor the same prompt text; a task whose prompts repeat falls back to other problems).
 */
function heldOutProblems(context: StageContext, seed: string, stageProblems: Problem[]): Problem[] {
  const count = context.config.certificate.heldOutProblems;
  if (count === 0) return [];
  const ids = new Set(stageProblems.map((problem) => problem.id));
  const prompts = new Set(stageProblems.map((problem) => problem.prompt));
  const candidates = context.task
    .split('train', {
      seed: new RandomGenerator(`${seed}/held-out`).nextUint32(),
      count: count + stageProblems.length,
    })
    .filter((problem) => !ids.has(problem.id));
  const unseen = candidates.filter((problem) => !prompts.has(problem.prompt));
  const repeated = candidates.filter((problem) => prompts.has(problem.prompt));
  return [...unseen, ...repeated].slice(0, count);
}

function meanReward(batch: TeamBatch): number {
  return (
    batch.trajectories.reduce((total, trajectory) => total + trajectory.reward, 0) /
    Math.max(1, batch.trajectories.length)
  );
}
