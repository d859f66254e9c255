import type { Command } from 'commander';
import { evaluateTeam, type EvaluationFigures } from '../../trainer/evaluate.js';
import { openRun, type OpenedRun } from '../../trainer/open-run.js';
import { loadTaskModule } from '../task-module.js';
import { TeamtrError } from '../../util/errors.js';
import { formatTranscript } from '../../trainer/outputs/transcript-text.js';
import { sampleTranscripts, type Transcript } from '../../trainer/outputs/transcripts.js';

type EvalFlags = Record<string, string | boolean | undefined>;

/** What `teamtr eval` prints (`--json`: as one object, in this key order). */
interface EvalResult extends EvaluationFigures {
  runDirectory: string;
  samples?: Transcript[];
}

export function register(program: Command): void {
  declareEvalArguments(
    program
      .command('eval')
      .description(
        "evaluate a run's latest team on held-out problems: team accuracy and per-agent turn accuracy with 95% intervals",
      ),
  ).action(evaluateRun);
}

/** The command's argument and options, in the order `--help` lists them. */
function declareEvalArguments(command: Command): Command {
  return command
    .argument('<run-dir>', 'a run directory written by `teamtr train`')
    .option('--problems <n>', 'number of eval problems (default: the run config)')
    .option('--temperature <t>', 'sampling temperature, 0 = greedy (default: the run config)')
    .option('--seed <n>', 'seed of the eval split and of sampling (default: the run seed)')
    .option('--task-module <file>', "the run's task, when it was defined in code")
    .option(
      '--samples <n>',
      'also print this many transcripts of the evaluation (what the agents wrote)',
    )
    .option('--json', 'print one JSON object on stdout');
}

/** The command's action: evaluates the run's latest team and prints the figures. */
async function evaluateRun(runDirectory: string, flags: EvalFlags): Promise<void> {
  const samples = flags.samples === undefined ? 0 : Number(flags.samples);
  if (!Number.isSafeInteger(samples) || samples < 0)
    throw new TeamtrError(`--samples must be a non-negative integer, got ${flags.samples}`);
  const { run, config, task, built } = await openRun(runDirectory, {
    task: flags.taskModule ? await loadTaskModule(String(flags.taskModule)) : undefined,
  });
  const { count, seed, temperature } = evaluationSettings(flags, config);
  const problems = task.split('eval', { seed, count });
  const evaluation = await evaluateTeam({
    team: built.team,
    task,
    problems,
    temperature,
    seed: `${seed}/eval`,
  });
  const result: EvalResult = {
    runDirectory,
    accuracy: evaluation.accuracy,
    interval: evaluation.interval,
    count: evaluation.count,
    meanReward: evaluation.meanReward,
    agents: evaluation.agents,
    ...(samples > 0
      ? {
          samples: sampleTranscripts(
            built.team,
            evaluation.batch,
            (await run.readCheckpointState())?.stage ?? 0,
            samples,
          ),
        }
      : {}),
  };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  printEvaluation(result, task.name);
}

/** --problems, --seed and --temperature, each defaulting to the run config's, checked. */
function evaluationSettings(
  flags: EvalFlags,
  config: OpenedRun['config'],
): { count: number; seed: number; temperature: number } {
  const count = flags.problems === undefined ? config.evaluation.problems : Number(flags.problems);
  const seed = flags.seed === undefined ? config.seed : Number(flags.seed);
  const temperature =
    flags.temperature === undefined ? config.evaluation.temperature : Number(flags.temperature);
  if (!Number.isInteger(count) || count <= 0)
    throw new TeamtrError(`--problems must be a positive integer, got ${flags.problems}`);
  if (!Number.isInteger(seed) || seed < 0)
    throw new TeamtrError(`--seed must be a non-negative integer, got ${flags.seed}`);
  if (!(temperature >= 0))
    throw new TeamtrError(`--temperature must be ≥ 0, got ${flags.temperature}`);
  return { count, seed, temperature };
}

/** The figures as text: team accuracy, each agent's turn accuracy, then any transcripts. */
function printEvaluation(result: EvalResult, taskName: string): void {
  const percent = (value: number) => `${(100 * value).toFixed(1)}%`;
  process.stdout.write(
    `team accuracy ${percent(result.accuracy)} [${percent(result.interval[0])}, ${percent(result.interval[1])}] on ${result.count} ${taskName} eval problems\n`,
  );
  for (const agent of result.agents) {
    process.stdout.write(
      `  ${agent.agent}: ${agent.turnAccuracy === null ? 'turn accuracy n/a (the task cannot judge single turns)' : `turn accuracy ${percent(agent.turnAccuracy)} [${percent(agent.interval![0])}, ${percent(agent.interval![1])}] over ${agent.count} turns`}\n`,
    );
  }
  for (const transcript of result.samples ?? [])
    process.stdout.write(`\n${formatTranscript(transcript)}\n`);
}
