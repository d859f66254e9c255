import { InvalidArgumentError, type Command } from 'commander';
import { resolveTheoryConfig, type TheoryConfig } from '../../theory/config.js';
import { runTheoryExperiment, type TheoryProgress } from '../../theory/experiment.js';
import { theoryFileNames, writeTheoryOutputs } from '../../theory/output.js';
import { renderSvgChart } from '../../figures/svg.js';
import { renderTheoryReport, renderTheoryTable } from '../../theory/report.js';
import { buildScalingFigure } from '../../theory/scaling-figure.js';
import { summarizeTheory, type TheorySummary } from '../../theory/summary.js';
import type { ResultTable } from '../../report/result-file.js';
import { addResultFlags, writeCommandResult } from '../result-flag.js';

/**
 * `teamtr theory`: the exact check of TeamTR's theory in tabular team games (docs/method.md §7).
 * Flags are the kebab-case keys of `theoryConfigSchema` (the single source of defaults and
 * validation), plus `--out` and `--json`.
 */
interface TheoryFlags {
  agentCounts?: number[];
  tokensPerTurn?: number;
  vocabularySize?: number;
  rounds?: number;
  delta?: number;
  games?: number;
  seed?: number;
  families?: string[];
  logitScale?: number;
  bootstrapSamples?: number;
  out: string;
  json?: boolean;
}

function parseNumber(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) {
    throw new InvalidArgumentError(`expected a number, got "${value}"`);
  }
  return parsed;
}

function parseNumberList(value: string): number[] {
  return value.split(',').map((part) => parseNumber(part.trim()));
}

function parseNameList(value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

/** The flags that are experiment settings (everything but --out and --json). */
const settingKeys = [
  'agentCounts',
  'tokensPerTurn',
  'vocabularySize',
  'rounds',
  'delta',
  'games',
  'seed',
  'families',
  'logitScale',
  'bootstrapSamples',
] as const;

function configFromFlags(flags: TheoryFlags): TheoryConfig {
  const settings: Record<string, unknown> = {};
  for (const key of settingKeys) if (flags[key] !== undefined) settings[key] = flags[key];
  return resolveTheoryConfig(settings, 'teamtr theory');
}

function progressReporter(): ((progress: TheoryProgress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  return (progress) => {
    const done = progress.completedGames === progress.totalGames;
    process.stderr.write(
      `\r${progress.family} N=${progress.agentCount}: game ${progress.completedGames}/${progress.totalGames}${done ? '\n' : ''}`,
    );
  };
}

const slope = (value: unknown, interval: unknown): string | null =>
  typeof value !== 'number'
    ? null
    : `${value.toFixed(2)}${Array.isArray(interval) ? ` [${interval.map((bound: number) => bound.toFixed(2)).join(', ')}]` : ''}`;

/** `--result FILE`'s table: each reward family's slopes in N and its certificate check. */
export function theoryTable(summary: TheorySummary): ResultTable {
  const headline = `${slope(summary.stale_slope, summary.stale_ci)} against ${slope(summary.fresh_slope, summary.fresh_ci)}`;
  return {
    caption:
      summary.certificate_violations === 0
        ? `The certificate never exceeded the true improvement over ${summary.updates.toLocaleString('en-US')} exactly computed updates; the surrogate error's log-log slope in N is ${headline} for stale and fresh occupancy (family "${summary.family}").`
        : `The certificate exceeded the true improvement on ${summary.certificate_violations} of ${summary.updates} updates (by at most ${summary.max_violation.toExponential(2)}).`,
    columns: [
      'reward family',
      'surrogate error slope, stale',
      'fresh',
      'certificate penalty slope, stale',
      'fresh',
      'certificate above the true improvement',
    ],
    rows: Object.entries(summary.by_family).map(([family, entries]) => [
      family,
      slope(entries.stale_slope, entries.stale_ci),
      slope(entries.fresh_slope, entries.fresh_ci),
      slope(entries.stale_penalty_slope, entries.stale_penalty_ci),
      slope(entries.fresh_penalty_slope, entries.fresh_penalty_ci),
      `${String(entries.certificate_violations)} of ${String(entries.updates)} updates`,
    ]),
  };
}

async function runTheoryCommand(flags: TheoryFlags, command: Command): Promise<void> {
  const config = configFromFlags(flags);
  const started = performance.now();
  const result = runTheoryExperiment(config, progressReporter());
  const wallSeconds = (performance.now() - started) / 1000;
  const context = { wallSeconds, plotFile: theoryFileNames.plot };
  const summaryWithoutFiles = summarizeTheory(result, { wall_seconds: wallSeconds });
  const files = await writeTheoryOutputs(flags.out, {
    report: renderTheoryReport(result, context),
    plot: renderSvgChart(buildScalingFigure(result), { caption: true }),
    results: {
      summary: summaryWithoutFiles,
      games: result.families.flatMap((family) => family.outcomes),
    },
  });
  await writeCommandResult(command, {
    title: 'The exact check of the theory',
    tables: [theoryTable(summaryWithoutFiles)],
    notes: [
      'Every quantity is computed exactly in small tabular team games (no sampling). Slopes are log-log fits of the mean per-game quantity against the number of agents N, with 95% bootstrap intervals over games; the paper predicts about 2 (stale) and 1 (fresh).',
    ],
    wallSeconds,
    data: summaryWithoutFiles,
  });
  if (flags.json) {
    const summary = summarizeTheory(result, {
      wall_seconds: wallSeconds,
      output_directory: flags.out,
      files,
    });
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  process.stdout.write(renderTheoryTable(result, context));
  process.stdout.write(`wrote ${files.report}, ${files.plot}, ${files.results}\n`);
}

export function register(program: Command): void {
  const defaults = resolveTheoryConfig({});
  const command = program
    .command('theory')
    .description(
      'exact check of the TeamTR bounds in tabular team games: surrogate error of stale vs ' +
        'fresh occupancy against the number of agents, and the certificate on every update',
    )
    .option(
      '--agent-counts <list>',
      `team sizes N, comma-separated (default: ${defaults.agentCounts.join(',')})`,
      parseNumberList,
    )
    .option(
      '--tokens-per-turn <T>',
      `tokens each agent emits per turn (default: ${defaults.tokensPerTurn})`,
      parseNumber,
    )
    .option(
      '--vocabulary-size <V>',
      `vocabulary size (default: ${defaults.vocabularySize})`,
      parseNumber,
    )
    .option('--rounds <count>', `rounds of turns (default: ${defaults.rounds})`, parseNumber)
    .option(
      '--delta <kl>',
      `token-level KL of every step (default: ${defaults.delta})`,
      parseNumber,
    )
    .option(
      '--games <count>',
      `random games per N and family (default: ${defaults.games})`,
      parseNumber,
    )
    .option('--seed <n>', `seed of every random choice (default: ${defaults.seed})`, parseNumber)
    .option(
      '--families <list>',
      `reward families, the first is the headline (default: ${defaults.families.join(',')})`,
      parseNameList,
    )
    .option(
      '--logit-scale <sigma>',
      `initial logits ~ N(0, sigma²) (default: ${defaults.logitScale})`,
      parseNumber,
    )
    .option(
      '--bootstrap-samples <count>',
      `bootstrap resamples (default: ${defaults.bootstrapSamples})`,
      parseNumber,
    )
    .option(
      '--out <dir>',
      'output directory for report.md, scaling.svg, results.json',
      'runs/theory',
    )
    .option('--json', 'print one JSON object with the slopes and the certificate check');
  addResultFlags(command).action(async (flags: TheoryFlags) => runTheoryCommand(flags, command));
}
