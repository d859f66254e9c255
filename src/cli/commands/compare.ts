import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { readJsonFile } from '../../io/json-file.js';
import { pairedBootstrap, type Estimate } from '../../rl/index.js';
import { scheduleNames, trainConfigSchema } from '../../trainer/config/train-config.js';
import type { TrainSummary } from '../../trainer/summary.js';
import { ConfigError } from '../../util/errors.js';
import { addConfigFlags, configFromFlags } from '../config-flags.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import { signed } from '../format.js';
import { runTraining } from './train.js';
import { loadTaskModule } from '../task-module.js';
import { RandomGenerator } from '../../util/random.js';
import { addResultFlags, writeCommandResult } from '../result-flag.js';

export interface ScheduleComparison {
  schedule: string;
  seeds: number[];
  accuracyMean: number;
  accuracyStd: number;
  accuracyBeforeMean: number;
  regressionsMean: number;
  generatedTokensMean: number;
  wallSecondsMean: number;
  outOfRegionRateMean: number;
  cumulativeRankCorrelationMean: number | null;
  /** Team reward change per stage on new problems (the unbiased reading; summary.ts). */
  outOfSamplePerStageMean: number | null;
  /** The same on each stage's own problems, which its updates were fitted to. */
  inSamplePerStageMean: number | null;
  runs: string[];
  /**
   * Mean over seeds of this schedule's final accuracy minus the baseline's on the same seed,
   * with a 95% percentile bootstrap over the seeds (null for the baseline itself).
   */
  differenceToBaseline?: Estimate | null;
}

/**
 * Each row's paired difference to `baseline`: per seed, its accuracy minus the baseline's
 * (same seed, same untrained team and evaluation problems), the mean over the seeds both ran.
 */
export function pairWithBaseline(
  rows: readonly ScheduleComparison[],
  summaries: ReadonlyMap<string, readonly TrainSummary[]>,
  baseline: string,
): ScheduleComparison[] {
  const accuracyBySeed = (schedule: string) =>
    new Map(
      (summaries.get(schedule) ?? []).map((summary) => [
        summary.seed,
        summary.evalAfter?.accuracy ?? Number.NaN,
      ]),
    );
  const reference = accuracyBySeed(baseline);
  return rows.map((row) => {
    if (row.schedule === baseline) return { ...row, differenceToBaseline: null };
    const own = accuracyBySeed(row.schedule);
    const seeds = [...own.keys()].filter((seed) => reference.has(seed));
    return {
      ...row,
      differenceToBaseline: seeds.length
        ? pairedBootstrap({
            first: seeds.map((seed) => reference.get(seed)!),
            second: seeds.map((seed) => own.get(seed)!),
            random: new RandomGenerator(`compare/${row.schedule}/${baseline}`),
          })
        : null,
    };
  });
}

function meanAndStd(values: number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const variance =
    values.length > 1
      ? values.reduce((total, value) => total + (value - mean) ** 2, 0) / (values.length - 1)
      : 0;
  return { mean, std: Math.sqrt(variance) };
}

function parseList(text: string, flag: string): string[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw new ConfigError(flag, 'needs at least one value');
  return items;
}

export function summarizeSchedule(schedule: string, summaries: TrainSummary[]): ScheduleComparison {
  const accuracy = meanAndStd(
    summaries.map((summary) => summary.evalAfter?.accuracy ?? Number.NaN),
  );
  const correlations = summaries
    .map((summary) => summary.certificates.cumulativeRankCorrelation)
    .filter((value): value is number => value !== null);
  // Summaries written before stageImprovement existed have none.
  const perStage = (key: 'outOfSamplePerStage' | 'inSamplePerStage'): number | null => {
    const values = summaries
      .map((summary) => summary.stageImprovement?.[key] ?? null)
      .filter((value): value is number => value !== null);
    return values.length === summaries.length && values.length > 0 ? meanAndStd(values).mean : null;
  };
  return {
    schedule,
    seeds: summaries.map((summary) => summary.seed),
    accuracyMean: accuracy.mean,
    accuracyStd: accuracy.std,
    accuracyBeforeMean: meanAndStd(
      summaries.map((summary) => summary.evalBefore?.accuracy ?? Number.NaN),
    ).mean,
    regressionsMean: meanAndStd(summaries.map((summary) => summary.regressions)).mean,
    generatedTokensMean: meanAndStd(summaries.map((summary) => summary.generatedTokens)).mean,
    wallSecondsMean: meanAndStd(summaries.map((summary) => summary.wallSeconds)).mean,
    outOfRegionRateMean: meanAndStd(
      summaries.map((summary) => summary.certificates.outOfRegionRate),
    ).mean,
    cumulativeRankCorrelationMean: correlations.length ? meanAndStd(correlations).mean : null,
    outOfSamplePerStageMean: perStage('outOfSamplePerStage'),
    inSamplePerStageMean: perStage('inSamplePerStage'),
    runs: summaries.map((summary) => summary.runDirectory),
  };
}

const points = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(100 * value).toFixed(1)}`;

function difference(estimate: Estimate | null | undefined): string {
  if (!estimate) return '—';
  const interval = estimate.interval
    ? ` [${points(estimate.interval[0])}, ${points(estimate.interval[1])}]`
    : '';
  return `${points(estimate.value)}${interval}`;
}

/** The comparison as a table: one row per schedule, the paired difference to `baseline` first. */
export function comparisonTable(
  rows: ScheduleComparison[],
  baseline?: string,
): { columns: string[]; rows: string[][] } {
  const columns = [
    'schedule',
    ...(baseline ? [`Δ acc vs ${baseline} (points)`] : []),
    'eval acc (mean ± std)',
    'before',
    'regressions',
    'tokens',
    'wall s',
    'out-of-region',
    'cert~measured ρ',
    'reward/stage new (own) problems',
  ];
  const body = rows.map((row) => [
    row.schedule,
    ...(baseline ? [difference(row.differenceToBaseline)] : []),
    `${(100 * row.accuracyMean).toFixed(1)}% ± ${(100 * row.accuracyStd).toFixed(1)}`,
    `${(100 * row.accuracyBeforeMean).toFixed(1)}%`,
    row.regressionsMean.toFixed(1),
    Math.round(row.generatedTokensMean).toLocaleString('en-US'),
    row.wallSecondsMean.toFixed(0),
    `${(100 * row.outOfRegionRateMean).toFixed(1)}%`,
    row.cumulativeRankCorrelationMean === null
      ? 'n/a'
      : row.cumulativeRankCorrelationMean.toFixed(2),
    `${signed(row.outOfSamplePerStageMean)} (${signed(row.inSamplePerStageMean)})`,
  ]);
  return { columns, rows: body };
}

export function formatComparison(rows: ScheduleComparison[], baseline?: string): string {
  const { columns: header, rows: body } = comparisonTable(rows, baseline);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...body.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ');
  const notes = baseline
    ? [
        '',
        `Δ: per seed, accuracy minus ${baseline}'s on the same seed; the mean over seeds [95% percentile bootstrap over seeds].`,
        'Other columns: per-run values, mean (± standard deviation) over seeds.',
      ]
    : [];
  return (
    [
      line(header),
      line(widths.map((width) => '-'.repeat(width))),
      ...body.map(line),
      ...notes,
    ].join('\n') + '\n'
  );
}

/** `--result FILE`: the comparison, its best schedule named in the caption. */
async function writeComparisonResult(
  command: Command,
  rows: ScheduleComparison[],
  baseline: string,
  wallSeconds: number,
) {
  const best = [...rows].sort((a, b) => b.accuracyMean - a.accuracyMean)[0];
  const seeds = rows[0]?.seeds.length ?? 0;
  const bestDifference =
    best && best.schedule !== baseline
      ? ` (${difference(best.differenceToBaseline)} points vs ${baseline}, paired by seed)`
      : '';
  await writeCommandResult(command, {
    title: 'Schedules at a matched budget',
    tables: [
      {
        caption: best
          ? `At the same generated-token budget, ${best.schedule} ends highest (${(100 * best.accuracyMean).toFixed(1)}% held-out accuracy, mean over ${seeds} seed${seeds === 1 ? '' : 's'})${bestDifference}.`
          : 'No schedule ran.',
        ...comparisonTable(rows, baseline),
      },
    ],
    notes: [
      `Δ acc vs ${baseline}: per seed, accuracy minus ${baseline}'s on the same seed; the mean over seeds with a 95% percentile bootstrap over seeds.`,
      'Eval accuracy: held-out team accuracy after training, mean ± standard deviation over seeds. cert~measured ρ: cumulative rank correlation of the first-order certificate with the measured improvement. Reward per stage: on the next stage’s new problems (on the stage’s own problems in parentheses).',
    ],
    wallSeconds,
    data: rows,
  });
}

export function register(program: Command): void {
  const command = program
    .command('compare')
    .description(
      'train several schedules × seeds at the same generated-token budget and compare them',
    )
    .option('-c, --config <file>', 'base config (YAML or JSON); its schedule and seed are replaced')
    .option('--schedules <list>', 'comma-separated schedules', scheduleNames.join(','))
    .option('--seeds <list>', 'comma-separated seeds', '0,1,2')
    .option(
      '--baseline <schedule>',
      'the schedule every other is paired with, seed by seed (default sequential-stale when compared, else the first)',
    )
    .option(
      '--out <dir>',
      'directory for the runs (one sub-directory per schedule and seed)',
      path.join('runs', 'compare'),
    )
    .option('--task-module <file>', 'a task defined in code (a .js/.ts module), for every run')
    .option('--json', 'print one JSON object per schedule on stdout');
  addResultFlags(command);
  addConfigFlags(command, trainConfigSchema, {
    skip: ['schedule', 'seed'],
    docs: schemaDocs.train,
    inReference: true,
  });
  command.action((flags: Record<string, unknown>) => compareSchedules(command, flags));
}

/** What `teamtr compare` was asked for: schedules, seeds, the baseline and the base config. */
interface ComparisonPlan {
  base: Record<string, unknown>;
  schedules: string[];
  seeds: number[];
  baseline: string;
  out: string;
  task: Awaited<ReturnType<typeof loadTaskModule>> | undefined;
}

async function comparisonPlan(flags: Record<string, unknown>): Promise<ComparisonPlan> {
  const task = flags.taskModule ? await loadTaskModule(String(flags.taskModule)) : undefined;
  const base = configFromFlags(trainConfigSchema, flags);
  const schedules = parseList(String(flags.schedules), '--schedules');
  for (const schedule of schedules) {
    if (!(scheduleNames as readonly string[]).includes(schedule))
      throw new ConfigError(
        '--schedules',
        `unknown schedule "${schedule}" (valid: ${scheduleNames.join(', ')})`,
      );
  }
  const seeds = parseList(String(flags.seeds), '--seeds').map((seed) => {
    const value = Number(seed);
    if (!Number.isInteger(value) || value < 0)
      throw new ConfigError('--seeds', `"${seed}" is not a non-negative integer`);
    return value;
  });
  const baseline =
    flags.baseline === undefined
      ? schedules.includes('sequential-stale')
        ? 'sequential-stale'
        : schedules[0]!
      : String(flags.baseline);
  if (!schedules.includes(baseline))
    throw new ConfigError(
      '--baseline',
      `"${baseline}" is not among --schedules (${schedules.join(', ')})`,
    );
  return { base, schedules, seeds, baseline, out: String(flags.out), task };
}

/** Trains one schedule on every seed (a finished run is read, an interrupted one resumed). */
async function trainSchedule(plan: ComparisonPlan, schedule: string): Promise<TrainSummary[]> {
  const summaries: TrainSummary[] = [];
  for (const seed of plan.seeds) {
    const runDirectory = path.join(plan.out, `${schedule}-seed${seed}`);
    const summaryPath = path.join(runDirectory, 'summary.json');
    const finished = existsSync(summaryPath)
      ? ((await readJsonFile(summaryPath)) as TrainSummary)
      : null;
    if (finished && !finished.interrupted) {
      process.stderr.write(
        `compare: ${schedule} seed ${seed} already finished in ${runDirectory}\n`,
      );
      summaries.push(finished);
      continue;
    }
    process.stderr.write(`compare: ${schedule} seed ${seed} → ${runDirectory}\n`);
    summaries.push(
      await runTraining({
        config: { ...plan.base, schedule, seed },
        runDirectory,
        resume: existsSync(path.join(runDirectory, 'checkpoint')),
        quiet: true,
        task: plan.task,
      }),
    );
  }
  return summaries;
}

async function compareSchedules(command: Command, flags: Record<string, unknown>): Promise<void> {
  const started = Date.now();
  const plan = await comparisonPlan(flags);
  const rows: ScheduleComparison[] = [];
  const bySchedule = new Map<string, TrainSummary[]>();
  for (const schedule of plan.schedules) {
    const summaries = await trainSchedule(plan, schedule);
    bySchedule.set(schedule, summaries);
    rows.push(summarizeSchedule(schedule, summaries));
  }
  const paired = pairWithBaseline(rows, bySchedule, plan.baseline);
  if (flags.json) for (const row of paired) process.stdout.write(`${JSON.stringify(row)}\n`);
  else process.stdout.write(formatComparison(paired, plan.baseline));
  await writeComparisonResult(command, paired, plan.baseline, (Date.now() - started) / 1000);
}
