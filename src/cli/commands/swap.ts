import type { Command } from 'commander';
import { alignmentModes } from '../../trainer/config/train-config.js';
import { scheduleSwap } from '../../trainer/schedule-swap.js';
import { TeamtrError } from '../../util/errors.js';

function number(flag: string, value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || (integer && !Number.isInteger(parsed))) {
    throw new TeamtrError(
      `--${flag} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(value)}`,
    );
  }
  return parsed;
}

export function register(program: Command): void {
  program
    .command('swap')
    .description(
      "replace an agent's model in a stopped run at the stage after its checkpoint (with optional stage-0 alignment); `teamtr train --resume` applies it",
    )
    .argument('<run-dir>', 'a run directory written by `teamtr train`')
    .requiredOption('--agent <name>', 'the agent to replace')
    .requiredOption(
      '--model <model>',
      'the incoming model: a checkpoint directory or builtin:<task>/<role>',
    )
    .option('--align-steps <n>', 'stage-0 alignment steps (default 0: no alignment)')
    .option(
      '--align-mode <mode>',
      `alignment objective (${alignmentModes.join(' | ')}; default sft)`,
    )
    .option('--align-learning-rate <lr>', 'alignment peak learning rate (default 1e-3)')
    .option('--align-warmup-steps <n>', 'linear warmup before the cosine decay (default steps/10)')
    .option('--align-minibatches <n>', 'minibatches (steps) per fresh team batch (default 4)')
    .option('--align-epochs <n>', 'passes over each fresh team batch (default 1)')
    .option(
      '--role-prompt <text>',
      "the incoming model's role prompt (default: the outgoing agent's)",
    )
    .option(
      '--learning-rate <lr>',
      "the agent's RL learning rate after the swap (default: unchanged)",
    )
    .option(
      '--measure-problems <n>',
      'problems in the batches that measure the swap shock (default rollout.problemsPerBatch)',
    )
    .option('--json', 'print one JSON object on stdout')
    .action((runDirectory: string, flags: SwapFlags) => swapAgent(runDirectory, flags));
}

type SwapFlags = Record<string, string | boolean | undefined>;

/** Schedules the swap the flags describe and says how to apply it (or prints it as JSON). */
async function swapAgent(runDirectory: string, flags: SwapFlags): Promise<void> {
  const text = (key: string) => flags[key] as string | undefined;
  const scheduled = await scheduleSwap({
    runDirectory,
    agent: String(flags.agent),
    model: String(flags.model),
    rolePrompt: text('rolePrompt'),
    learningRate: number('learning-rate', text('learningRate'), false),
    measureProblems: number('measure-problems', text('measureProblems'), true),
    alignment: {
      steps: number('align-steps', text('alignSteps'), true),
      mode: text('alignMode'),
      learningRate: number('align-learning-rate', text('alignLearningRate'), false),
      warmupSteps: number('align-warmup-steps', text('alignWarmupSteps'), true),
      minibatches: number('align-minibatches', text('alignMinibatches'), true),
      epochs: number('align-epochs', text('alignEpochs'), true),
    },
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(scheduled)}\n`);
    return;
  }
  const { swap } = scheduled;
  const alignment =
    swap.alignment.steps > 0
      ? `${swap.alignment.steps} ${swap.alignment.mode} alignment steps`
      : 'no alignment';
  process.stdout.write(
    `Scheduled: agent ${swap.agent} gets ${swap.model} right before stage ${swap.stage} (${alignment}).\n` +
      `Apply it with: teamtr train --resume --run-dir ${runDirectory}\n`,
  );
}
