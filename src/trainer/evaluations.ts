import type { Problem, Task } from '../tasks/index.js';
import type { Team } from '../team/team.js';
import { evaluateTeam, type EvaluationFigures } from './evaluate.js';
import type { StageWatch } from './stage.js';

/** Why an evaluation was taken. */
export type EvaluationMoment = 'start' | 'stage' | 'updates' | 'tokens' | 'end';

/** A held-out evaluation of the team as metrics.jsonl records it (evaluationRecord). */
export interface EvaluationRecord extends EvaluationFigures {
  type: 'eval';
  stage: number;
  generatedTokens: number;
  /** Agent updates the team had made when it was evaluated (absent in older runs). */
  updates?: number;
  /**
   * start, end, stage (after every `evaluation.every` stages), updates or tokens (at a mark of
   * `evaluation.everyUpdates` / `everyTokens`, possibly inside a stage). Absent in older runs.
   */
  at?: EvaluationMoment;
  /** The update count or the token count the evaluation stands for (at updates / tokens). */
  mark?: number;
}

/** What an evaluation needs of the run. */
export interface EvaluationContext {
  team: Team;
  task: Task;
  problems: Problem[];
  temperature: number;
  /** The run's seed: every evaluation draws the same problems and random streams. */
  seed: number;
}

/** Where the run stands when it evaluates. */
export interface RunPosition {
  stage: number;
  generatedTokens: number;
  updates: number;
}

/** Held-out accuracy of the team as it is now (the same problems and streams every time). */
export async function evaluationRecord(
  context: EvaluationContext,
  position: RunPosition,
  at: EvaluationMoment,
  mark?: number,
): Promise<EvaluationRecord> {
  const evaluation = await evaluateTeam({
    team: context.team,
    task: context.task,
    problems: context.problems,
    temperature: context.temperature,
    seed: `${context.seed}/eval`,
  });
  return {
    type: 'eval',
    stage: position.stage,
    generatedTokens: position.generatedTokens,
    updates: position.updates,
    at,
    ...(mark === undefined ? {} : { mark }),
    accuracy: evaluation.accuracy,
    interval: evaluation.interval,
    count: evaluation.count,
    meanReward: evaluation.meanReward,
    agents: evaluation.agents,
  };
}

/**
 * Evaluations at fixed counts of agent updates (after every `everyUpdates`-th update) and of
 * generated tokens (when a batch carries the run past a multiple of `everyTokens` below the
 * budget: the team that generated that token), inside the stage where the mark falls, so that
 * every schedule is read at the same counts. Inside a stage the team changes only by updates, so two marks with
 * no update between them share one evaluation.
 */
export function evaluationMarks(
  context: EvaluationContext,
  settings: { stage: number; everyUpdates?: number; everyTokens?: number; tokenBudget?: number },
): StageWatch & { records: EvaluationRecord[] } {
  const records: EvaluationRecord[] = [];
  let latest: EvaluationRecord | null = null;
  const evaluate = async (position: RunPosition, at: EvaluationMoment, mark: number) => {
    const record: EvaluationRecord =
      latest && latest.updates === position.updates
        ? { ...latest, ...position, at, mark }
        : await evaluationRecord(context, position, at, mark);
    latest = record;
    records.push(record);
  };
  const { stage, everyUpdates, everyTokens } = settings;
  return {
    records,
    async sampled({ before, after, updates }) {
      if (!everyTokens) return;
      for (
        let mark = (Math.floor(before / everyTokens) + 1) * everyTokens;
        mark <= after;
        mark += everyTokens
      )
        await evaluate({ stage, generatedTokens: after, updates }, 'tokens', mark);
    },
    async updated({ updates, tokens }) {
      if (everyUpdates && updates % everyUpdates === 0)
        await evaluate({ stage, generatedTokens: tokens, updates }, 'updates', updates);
    },
  };
}
