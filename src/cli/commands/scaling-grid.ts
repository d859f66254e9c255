import { existsSync } from 'node:fs';
import path from 'node:path';
import { readJsonFileSync } from '../../io/json-file.js';
import { trainConfigSchema } from '../../trainer/config/train-config.js';
import type { TrainSummary } from '../../trainer/summary.js';
import { ConfigError } from '../../util/errors.js';
import { runTraining } from './train.js';

/** One run of the grid: a team size, a schedule and a seed, in its own directory. */
export interface GridCell {
  agents: number;
  schedule: string;
  seed: number;
  directory: string;
  /** The config the run trains with. */
  config: Record<string, unknown>;
}

/** "2,4" → [2, 4], each checked by `parse` (which names what is wrong). */
export function parseList<T>(text: string, flag: string, parse: (item: string) => T): T[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw new ConfigError(flag, 'needs at least one value');
  return items.map(parse);
}

export function integerIn(flag: string, low: number, high: number) {
  return (item: string): number => {
    const value = Number(item);
    if (!Number.isInteger(value) || value < low || value > high)
      throw new ConfigError(flag, `"${item}" is not an integer from ${low} to ${high}`);
    return value;
  };
}

/** How each cell's budget and evaluation marks follow from its team size. */
export interface GridPlan {
  base: Record<string, unknown>;
  out: string;
  /** Budget per agent (a team of N gets N times it); null: the base config's budget. */
  tokensPerAgent: number | null;
  /** Evaluations at this many equally spaced token counts up to the budget. */
  tokenMarks: number;
  /** Evaluate after every this many stages' worth of updates (N updates per full stage). */
  updateMarkStages: number;
}

/** The config of one cell: the base with its team size, schedule, seed, budget and marks. */
export function cellConfig(
  plan: GridPlan,
  cell: { agents: number; schedule: string; seed: number },
): Record<string, unknown> {
  const base = plan.base as { task: object; budget?: object; evaluation?: object };
  const budget = {
    ...base.budget,
    ...(plan.tokensPerAgent === null ? {} : { generatedTokens: plan.tokensPerAgent * cell.agents }),
  };
  const resolved = trainConfigSchema.parse({ ...plan.base, budget });
  return {
    ...plan.base,
    task: { ...base.task, agents: cell.agents },
    schedule: cell.schedule,
    seed: cell.seed,
    budget,
    evaluation: {
      ...base.evaluation,
      everyTokens: Math.ceil(resolved.budget.generatedTokens / plan.tokenMarks),
      everyUpdates: plan.updateMarkStages * cell.agents,
    },
  };
}

/** Every cell of the grid, its config checked before anything runs. */
export function gridCells(
  plan: GridPlan,
  axes: { agents: number[]; schedules: string[]; seeds: number[] },
): GridCell[] {
  const cells: GridCell[] = [];
  for (const agents of axes.agents)
    for (const schedule of axes.schedules)
      for (const seed of axes.seeds) {
        const config = cellConfig(plan, { agents, schedule, seed });
        const parsed = trainConfigSchema.safeParse(config);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw new ConfigError(
            '--team-sizes',
            `"${agents}" does not fit the task: ${issue.path.join('.')}: ${issue.message}`,
          );
        }
        const directory = path.join(plan.out, `N${agents}-${schedule}-seed${seed}`);
        cells.push({ agents, schedule, seed, directory, config });
      }
  return cells;
}

/**
 * Runs a cell: a finished run is reused, an interrupted one resumed, anything else started.
 * A directory holding a run made with other settings stops the grid (it names them).
 */
/** Trains the cell unless it already finished; returns the seconds spent on it now. */
export async function runCell(cell: GridCell): Promise<number> {
  const { directory } = cell;
  const started = existsSync(path.join(directory, 'config.json'));
  if (started) checkSameSettings(cell);
  const summaryPath = path.join(directory, 'summary.json');
  if (existsSync(summaryPath)) {
    const summary = readJsonFileSync(summaryPath) as TrainSummary;
    if (!summary.interrupted) {
      process.stderr.write(`scaling: ${directory} already finished\n`);
      return 0;
    }
  }
  process.stderr.write(`scaling: → ${directory}\n`);
  const startedAt = performance.now();
  // A run stopped before its first checkpoint resumes from the start (same seed, same run).
  await runTraining({ config: cell.config, runDirectory: directory, resume: started, quiet: true });
  return (performance.now() - startedAt) / 1000;
}

/**
 * A section's default, for a run stored before the section existed (it ran with what the default
 * now states, e.g. a run from before `tracking` was added).
 */
function defaultOf(key: string): unknown {
  const field = trainConfigSchema.shape[key as keyof typeof trainConfigSchema.shape];
  return field?.safeParse(undefined).data;
}

/**
 * A run already in the cell's directory must have been made with the cell's settings. The
 * trainer adds what it resolved (the task's fingerprint, default agents) to the config it
 * stores, so only the settings the request names are compared.
 */
function checkSameSettings(cell: GridCell): void {
  const stored = readJsonFileSync(path.join(cell.directory, 'config.json')) as Record<
    string,
    unknown
  >;
  const requested = trainConfigSchema.parse(cell.config) as Record<string, unknown>;
  const changed = Object.keys(requested).filter(
    (key) =>
      requested[key] !== undefined &&
      JSON.stringify(key in stored ? stored[key] : defaultOf(key)) !==
        JSON.stringify(requested[key]),
  );
  if (changed.length > 0)
    throw new ConfigError(
      '--out',
      `${cell.directory} holds a run with other ${changed.join(', ')} settings; ` +
        'choose another --out, or delete that directory to rerun it',
    );
}

/**
 * The grid's wall seconds: this command's own, plus what earlier commands spent on its runs
 * (a reused run's summary, the earlier parts of a resumed one; summaries add resumed parts
 * together). `spentNow[i]` is what this command spent on cell i (runCell's answer).
 */
export function gridWallSeconds(
  cells: readonly GridCell[],
  spentNow: readonly number[],
  secondsThisCommand: number,
): number {
  return cells.reduce((total, cell, index) => {
    const summaryPath = path.join(cell.directory, 'summary.json');
    if (!existsSync(summaryPath)) return total;
    const summary = readJsonFileSync(summaryPath) as TrainSummary;
    return total + Math.max(0, summary.wallSeconds - (spentNow[index] ?? 0));
  }, secondsThisCommand);
}
