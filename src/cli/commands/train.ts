import path from 'node:path';
import type { Command } from 'commander';
import { trainConfigSchema } from '../../trainer/config/train-config.js';
import { train, type TrainProgress } from '../../trainer/trainer.js';
import type { SwapRecord } from '../../trainer/records.js';
import type { TrainSummary } from '../../trainer/summary.js';
import { TeamtrError } from '../../util/errors.js';
import { addConfigFlags, configFlagsGiven, configFromFlags } from '../config-flags.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import { ProgressReporter, stageStatus } from '../progress.js';
import { loadTaskModule } from '../task-module.js';
import type { TaskInput } from '../../trainer/setup/task-source.js';
import { formatSummary } from '../format.js';
import { onStopSignals, stopSignalNames } from '../interrupted.js';
import { nextSteps } from '../next-steps.js';
import { addResultFlags, writeCommandResult } from '../result-flag.js';
import { certificateTable, runNotes, runTable } from '../result-tables.js';

export function defaultRunDirectory(schedule: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace('T', '_').slice(0, 19);
  return path.join('runs', `${schedule}-${stamp}`);
}

/** One line per swap: who changed, the reward shock, and what alignment recovered. */
export function describeSwap(record: SwapRecord): string {
  const reward = (value: number): string => value.toFixed(3);
  const aligned =
    record.rewardAfterAlignment === null
      ? 'no alignment'
      : `after ${record.alignmentSteps} ${record.alignmentMode} alignment steps ${reward(record.rewardAfterAlignment)}`;
  return (
    `  swap before stage ${record.stage}: ${record.agent} ${record.fromModel} → ${record.toModel}; ` +
    `reward ${reward(record.rewardBefore)} → ${reward(record.rewardAfterSwap)} ` +
    `(shock ${record.shock >= 0 ? '+' : ''}${reward(record.shock)}), ${aligned}`
  );
}

/** `--endpoint agent=url` values as a map, or undefined when none was given. */
export function endpointMoves(
  values: readonly string[] | undefined,
): Record<string, string> | undefined {
  if (!values || values.length === 0) return undefined;
  const moves: Record<string, string> = {};
  for (const value of values) {
    const separator = value.indexOf('=');
    if (separator <= 0 || separator === value.length - 1)
      throw new TeamtrError(
        `--endpoint takes AGENT=URL (e.g. critic=http://127.0.0.1:8001/v1), got ${JSON.stringify(value)}`,
      );
    moves[value.slice(0, separator)] = value.slice(separator + 1);
  }
  return moves;
}

/**
 * Runs training with progress on stderr and stop-signal handling: the first Ctrl-C, SIGTERM or
 * SIGHUP finishes the current stage, saves a checkpoint and a summary, and exits; a second one
 * exits at once (the last checkpoint stays intact: every write is atomic).
 */
export async function runTraining(options: {
  config: unknown;
  runDirectory: string;
  resume: boolean;
  quiet: boolean;
  endpoints?: Record<string, string>;
  task?: TaskInput;
  taskModule?: string;
}): Promise<TrainSummary> {
  const progress = new ProgressReporter(options.quiet);
  const controller = new AbortController();
  const stopListening = onStopSignals((signal) => {
    progress.log(
      `teamtr: ${stopSignalNames[signal]} — finishing the current stage and saving (Ctrl-C again to quit now)`,
    );
    controller.abort();
  });
  try {
    return await train({
      config: options.config as never,
      runDirectory: options.runDirectory,
      resume: options.resume,
      endpoints: options.endpoints,
      task: options.task,
      taskModule: options.taskModule,
      signal: controller.signal,
      onProgress: (event: TrainProgress) => {
        if (event.kind === 'start')
          progress.start('train', event.budget, event.generatedTokens, 'tokens');
        else if (event.kind === 'stage')
          progress.update(
            Math.min(event.generatedTokens, event.budget),
            stageStatus(event),
            event.budget,
          );
        else if (event.kind === 'eval')
          progress.log(
            `  eval after stage ${event.stage}: team accuracy ${(100 * event.accuracy).toFixed(1)}%`,
          );
        else if (event.kind === 'swap') progress.log(describeSwap(event.record));
        else if (event.kind === 'warning') progress.log(`  warning: ${event.message}`);
      },
    });
  } finally {
    progress.stop();
    stopListening();
  }
}

export function register(program: Command): void {
  const command = program
    .command('train')
    .description('train a team (TeamTR or a baseline schedule) from a YAML/JSON config and flags')
    .option('-c, --config <file>', 'config file (YAML or JSON); flags override its keys')
    .option('--run-dir <dir>', 'run directory (default runs/<schedule>-<time>)')
    .option('--resume', 'continue the run in --run-dir from its last checkpoint')
    .option(
      '--endpoint <agent=url>',
      "with --resume: a remote agent's new server address (baseURL), e.g. after a restart; repeatable",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      '--task-module <file>',
      'a task defined in code: a .js/.ts module exporting { name, problems, reward } (replaces --task)',
    )
    .option('--json', 'print one JSON summary object on stdout');
  addResultFlags(command);
  addConfigFlags(command, trainConfigSchema, { docs: schemaDocs.train, inReference: true });
  command.action(async (flags: Record<string, unknown>) => {
    const task = flags.taskModule ? await loadTaskModule(flags.taskModule as string) : undefined;
    const endpoints = endpointMoves(flags.endpoint as string[] | undefined);
    if (flags.resume) {
      const given = [
        ...(flags.config === undefined ? [] : ['--config']),
        ...configFlagsGiven(trainConfigSchema, flags),
      ];
      if (given.length > 0)
        throw new TeamtrError(
          `--resume continues a run with its own config.json, so ${given.join(', ')} cannot change it; drop ${given.length === 1 ? 'it' : 'them'} (to point a remote agent at a new address, use --endpoint AGENT=URL)`,
        );
    }
    if (flags.resume && flags.runDir === undefined)
      throw new TeamtrError(
        '--resume continues an existing run: say which with --run-dir DIR (the directory the run writes to, e.g. runs/teamtr-2026-11-24_20-31-05)',
      );
    const config = flags.resume ? {} : configFromFlags(trainConfigSchema, flags);
    const runDirectory =
      (flags.runDir as string | undefined) ??
      defaultRunDirectory(String((config as { schedule?: string }).schedule ?? 'teamtr'));
    const summary = await runTraining({
      config,
      runDirectory,
      resume: Boolean(flags.resume),
      quiet: false,
      endpoints,
      task,
      taskModule: flags.taskModule as string | undefined,
    });
    if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stdout.write(`${formatSummary(summary)}${nextSteps(summary.runDirectory)}`);
    await writeRunResult(command, `Training: ${summary.schedule}, seed ${summary.seed}`, summary);
    exitAfterInterruption(summary);
  });
}

/** `--result FILE`: the run's headline figures and certificates as a result file. */
export async function writeRunResult(
  command: Command,
  title: string,
  summary: TrainSummary,
): Promise<void> {
  await writeCommandResult(command, {
    title,
    tables: [runTable(summary), certificateTable(summary)],
    notes: runNotes(summary),
    wallSeconds: summary.wallSeconds,
    data: summary,
  });
}

/**
 * An interrupted run saved cleanly, but it did not finish: exit 130 as after Ctrl-C, whichever
 * stop signal it was (130 says "stopped and saved: resume it").
 */
export function exitAfterInterruption(summary: TrainSummary): void {
  if (summary.interrupted) process.exitCode = 130;
}
