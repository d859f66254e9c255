import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { writeFileAtomic } from '../../io/atomic.js';
import { analyzeScaling, formatScalingReport } from '../../experiments/scaling-report.js';
import type { ScalingRun } from '../../experiments/scaling-analysis.js';
import { scalingCurveFigures } from '../../experiments/scaling-figures.js';
import { loadRuns } from '../../report/runs.js';
import { renderSvgChart } from '../../figures/svg.js';
import { workedChainMaxAgents } from '../../tasks/index.js';
import { scheduleNames, trainConfigSchema } from '../../trainer/config/train-config.js';
import type { TrainSummary } from '../../trainer/summary.js';
import { ConfigError } from '../../util/errors.js';
import { addConfigFlags, configFromFlags } from '../config-flags.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import { runTraining } from './train.js';

/** "2,4" → [2, 4], each checked by `check` (which names what is wrong). */
function parseList<T>(text: string, flag: string, parse: (item: string) => T): T[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw new ConfigError(flag, 'needs at least one value');
  return items.map(parse);
}

function integerIn(flag: string, low: number, high: number) {
  return (item: string): number => {
    const value = Number(item);
    if (!Number.isInteger(value) || value < low || value > high)
      throw new ConfigError(flag, `"${item}" is not an integer from ${low} to ${high}`);
    return value;
  };
}

/** A finished run is reused, an interrupted one resumed, anything else started. */
async function runCell(config: unknown, runDirectory: string): Promise<void> {
  const summaryPath = path.join(runDirectory, 'summary.json');
  if (existsSync(summaryPath)) {
    // The trainer adds what it resolved (the task's fingerprint, default agents) to the config
    // it stores, so only the settings the request names are compared.
    const stored = JSON.parse(
      readFileSync(path.join(runDirectory, 'config.json'), 'utf8'),
    ) as Record<string, unknown>;
    const requested = trainConfigSchema.parse(config) as Record<string, unknown>;
    const changed = Object.keys(requested).filter(
      (key) =>
        requested[key] !== undefined &&
        JSON.stringify(stored[key]) !== JSON.stringify(requested[key]),
    );
    if (changed.length > 0)
      throw new ConfigError(
        '--out',
        `${runDirectory} holds a run with other ${changed.join(', ')} settings; ` +
          'choose another --out, or delete that directory to rerun it',
      );
    const summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as TrainSummary;
    if (!summary.interrupted) {
      process.stderr.write(`scaling: ${runDirectory} already finished\n`);
      return;
    }
  }
  process.stderr.write(`scaling: → ${runDirectory}\n`);
  await runTraining({
    config,
    runDirectory,
    resume: existsSync(path.join(runDirectory, 'checkpoint')),
    quiet: true,
  });
}

export function register(program: Command): void {
  const command = program
    .command('scaling')
    .description(
      'the LM-level scaling experiment: team sizes × schedules × seeds on the long-turn task ' +
        '(configs/scaling.yaml), then occupancy gaps, surrogate errors and their slope in N, ' +
        'accuracy at matched tokens and matched updates, with bootstrap intervals',
    )
    .option(
      '-c, --config <file>',
      'base config; its task.agents, schedule and seed are replaced',
      path.join('configs', 'scaling.yaml'),
    )
    .option('--team-sizes <list>', 'team sizes N (2–8)', '2,4')
    .option('--schedules <list>', 'schedules', 'teamtr,sequential-stale,joint')
    .option('--seeds <list>', 'seeds', '0,1')
    .option(
      '--tokens-per-agent <n>',
      'generated-token budget per agent: a team of N gets N times it (default: budget.generatedTokens for every N)',
    )
    .option(
      '--out <dir>',
      'directory for the runs, scaling.json / scaling.md and the training curves (scaling-curves-N<n>.svg)',
      path.join('runs', 'scaling'),
    )
    .option('--json', 'print the report as JSON on stdout');
  addConfigFlags(command, trainConfigSchema, {
    skip: ['schedule', 'seed', 'agents'],
    docs: schemaDocs.train,
    inReference: true,
  });
  command.action(async (flags: Record<string, unknown>) => {
    const base = configFromFlags(trainConfigSchema, flags);
    const agents = parseList(
      String(flags.teamSizes),
      '--team-sizes',
      integerIn('--team-sizes', 2, workedChainMaxAgents),
    );
    const schedules = parseList(String(flags.schedules), '--schedules', (item) => {
      if (!(scheduleNames as readonly string[]).includes(item))
        throw new ConfigError(
          '--schedules',
          `unknown schedule "${item}" (valid: ${scheduleNames.join(', ')})`,
        );
      return item;
    });
    const seeds = parseList(String(flags.seeds), '--seeds', integerIn('--seeds', 0, 2 ** 31));
    const task = base.task as Record<string, unknown>;
    if (!('agents' in task) && task.name !== 'worked-chain')
      throw new ConfigError(
        'task',
        `the scaling experiment varies task.agents; use a task that has it (worked-chain), not "${String(task.name)}"`,
      );
    const out = String(flags.out);
    const perAgent =
      flags.tokensPerAgent === undefined
        ? null
        : integerIn('--tokens-per-agent', 1, 1e12)(String(flags.tokensPerAgent));
    const cells: { agents: number; schedule: string; seed: number; directory: string }[] = [];
    for (const count of agents)
      for (const schedule of schedules)
        for (const seed of seeds) {
          const directory = path.join(out, `N${count}-${schedule}-seed${seed}`);
          cells.push({ agents: count, schedule, seed, directory });
          const budget = perAgent
            ? { ...(base.budget as object), generatedTokens: perAgent * count }
            : base.budget;
          await runCell(
            { ...base, task: { ...task, agents: count }, schedule, seed, budget },
            directory,
          );
        }
    const views = await loadRuns(cells.map((cell) => cell.directory));
    const runs: ScalingRun[] = cells.map((cell, index) => ({
      ...cell,
      records: views[index]!.records,
    }));
    const report = analyzeScaling(runs);
    const markdown = formatScalingReport(report);
    await writeFileAtomic(path.join(out, 'scaling.json'), `${JSON.stringify(report, null, 2)}\n`);
    await writeFileAtomic(path.join(out, 'scaling.md'), markdown);
    for (const figure of scalingCurveFigures(report))
      await writeFileAtomic(
        path.join(out, `${figure.id}.svg`),
        renderSvgChart(figure, { caption: true }),
      );
    process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : markdown);
  });
}
