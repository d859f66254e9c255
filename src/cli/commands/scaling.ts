import path from 'node:path';
import type { Command } from 'commander';
import { writeFileAtomic } from '../../io/atomic.js';
import { analyzeScaling, formatScalingReport } from '../../experiments/scaling-report.js';
import type { ScalingRun } from '../../experiments/scaling-analysis.js';
import { scalingCurveFigures } from '../../experiments/scaling-figures.js';
import { scalingNotes, scalingTables } from '../../experiments/scaling-tables.js';
import { loadRuns } from '../../report/runs.js';
import { renderSvgChart } from '../../figures/svg.js';
import { scheduleNames, trainConfigSchema } from '../../trainer/config/train-config.js';
import { ConfigError } from '../../util/errors.js';
import { addConfigFlags, configFromFileAndFlags } from '../config-flags.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import {
  gridCells,
  gridWallSeconds,
  integerIn,
  parseList,
  runCell,
  type GridPlan,
} from './scaling-grid.js';
import { addResultFlags, writeCommandResult } from '../result-flag.js';

function scheduleList(text: string): string[] {
  return parseList(text, '--schedules', (item) => {
    if (!(scheduleNames as readonly string[]).includes(item))
      throw new ConfigError(
        '--schedules',
        `unknown schedule "${item}" (valid: ${scheduleNames.join(', ')})`,
      );
    return item;
  });
}

/**
 * The base config: --config, else configs/scaling-<task>.yaml; its task must be --task when
 * both are given.
 */
function baseConfig(flags: Record<string, unknown>): {
  base: Record<string, unknown>;
  task: string;
} {
  const requested = flags.task === undefined ? undefined : String(flags.task);
  const file =
    flags.config === undefined
      ? path.join('configs', `scaling-${requested ?? 'worked-chain'}.yaml`)
      : String(flags.config);
  // --task is this command's own option, not the config's `task` (which the file gives).
  const base = configFromFileAndFlags(trainConfigSchema, file, { ...flags, task: undefined });
  const name = String((base.task as { name?: unknown } | undefined)?.name ?? 'arithmetic-chain');
  if (requested !== undefined && requested !== name)
    throw new ConfigError(
      '--task',
      `is "${requested}" but ${file} trains "${name}"; give one of them`,
    );
  return { base, task: name };
}

async function runGrid(flags: Record<string, unknown>, command: Command): Promise<void> {
  const started = Date.now();
  const { base, task } = baseConfig(flags);
  const out = flags.out === undefined ? path.join('runs', `scaling-${task}`) : String(flags.out);
  const plan: GridPlan = {
    base,
    out,
    tokensPerAgent:
      flags.tokensPerAgent === undefined
        ? null
        : integerIn('--tokens-per-agent', 1, 1e12)(String(flags.tokensPerAgent)),
    tokenMarks: integerIn('--token-marks', 1, 1000)(String(flags.tokenMarks)),
    updateMarkStages: integerIn('--update-marks-every', 1, 1e6)(String(flags.updateMarksEvery)),
  };
  const cells = gridCells(plan, {
    agents: parseList(String(flags.teamSizes), '--team-sizes', integerIn('--team-sizes', 1, 1024)),
    schedules: scheduleList(String(flags.schedules)),
    seeds: parseList(String(flags.seeds), '--seeds', integerIn('--seeds', 0, 2 ** 31)),
  });
  const spentNow: number[] = [];
  for (const cell of cells) spentNow.push(await runCell(cell));
  const views = await loadRuns(cells.map((cell) => cell.directory));
  const runs: ScalingRun[] = cells.map((cell, index) => ({
    ...cell,
    records: views[index]!.records,
  }));
  const report = analyzeScaling(runs, {
    task,
    ...(flags.baseline === undefined ? {} : { baseline: String(flags.baseline) }),
  });
  const markdown = formatScalingReport(report);
  await writeFileAtomic(path.join(out, 'scaling.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFileAtomic(path.join(out, 'scaling.md'), markdown);
  for (const figure of scalingCurveFigures(report))
    await writeFileAtomic(
      path.join(out, `${figure.id}.svg`),
      renderSvgChart(figure, { caption: true }),
    );
  await writeCommandResult(command, {
    title: `Schedules at matched tokens on ${task}: ${cells.length} runs`,
    wallSeconds: Math.round(gridWallSeconds(cells, spentNow, (Date.now() - started) / 1000)),
    tables: scalingTables(report).map((table) => ({
      caption: `${table.title}: ${table.caption}`,
      columns: [...table.columns],
      rows: table.rows.map((row) => [...row]),
    })),
    notes: [
      `Wall time: this command's, plus what earlier invocations spent on the runs it reused or resumed (their summary.json).`,
      ...scalingNotes(report),
    ],
    data: {
      paired: report.paired,
      outcomes: report.outcomes,
      staleFreshRatios: report.staleFreshRatios,
      certificateCoverage: report.certificateCoverage,
      resampling: report.resampling,
    },
  });
  process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : markdown);
}

export function register(program: Command): void {
  const command = program
    .command('scaling')
    .description(
      'schedules compared at exactly matched tokens: team sizes × schedules × seeds on a task ' +
        '(configs/scaling-<task>.yaml), then paired differences to a baseline schedule, surrogate ' +
        'errors, occupancy gaps, the probabilistic certificate and lazy resampling decisions',
    );
  declareGridOptions(command);
  declareBudgetOptions(command);
  addResultFlags(command);
  addConfigFlags(command, trainConfigSchema, {
    skip: ['schedule', 'seed', 'agents', 'task'],
    docs: schemaDocs.train,
    inReference: true,
  });
  command.action(async (flags: Record<string, unknown>) => {
    await runGrid(flags, command);
  });
}

/** The grid: task, base config, team sizes, schedules, seeds and the baseline. */
function declareGridOptions(command: Command): void {
  command
    .option(
      '--task <name>',
      'the task of the grid: worked-chain or convention (default: the config’s)',
    )
    .option(
      '-c, --config <file>',
      'base config (default configs/scaling-<task>.yaml); its task.agents, schedule and seed are replaced',
    )
    .option('--team-sizes <list>', 'team sizes N', '2,4,8')
    .option('--schedules <list>', 'schedules', 'teamtr,lazy,sequential-stale,joint')
    .option('--seeds <list>', 'seeds', '0,1,2')
    .option(
      '--baseline <schedule>',
      'the schedule every other is paired with (default sequential-stale)',
    );
}

/** Each run's budget, when it is evaluated, and where the grid writes. */
function declareBudgetOptions(command: Command): void {
  command
    .option(
      '--tokens-per-agent <n>',
      'generated-token budget per agent: a team of N gets N times it (default: budget.generatedTokens for every N)',
    )
    .option('--token-marks <k>', 'evaluate at k equally spaced token counts up to the budget', '2')
    .option(
      '--update-marks-every <stages>',
      'evaluate after every <stages>·N agent updates (a full stage makes N)',
      '1',
    )
    .option(
      '--out <dir>',
      'directory for the runs, scaling.json / scaling.md and the training curves (default runs/scaling-<task>)',
    )
    .option('--json', 'print the report as JSON on stdout');
}
