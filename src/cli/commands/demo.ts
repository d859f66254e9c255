import type { Command } from 'commander';
import { trainConfigSchema } from '../../trainer/config/train-config.js';
import { addConfigFlags, configFromFileAndFlags } from '../config-flags.js';
import { formatSummary } from '../format.js';
import { defaultRunDirectory, exitAfterInterruption, runTraining } from './train.js';
import { packagePath } from '../package-path.js';

/** configs/demo.yaml in the package. */
export function demoConfigPath(): string {
  return packagePath('configs', 'demo.yaml');
}

export function register(program: Command): void {
  const command = program
    .command('demo')
    .description(
      'the main job: train the built-in 3-agent team on the default task with TeamTR (configs/demo.yaml) and report',
    )
    .option('--run-dir <dir>', 'run directory (default runs/demo-<time>)')
    .option('--json', 'print one JSON summary object on stdout');
  addConfigFlags(command, trainConfigSchema);
  command.action(async (flags: Record<string, unknown>) => {
    const config = configFromFileAndFlags(trainConfigSchema, demoConfigPath(), flags);
    const runDirectory = (flags.runDir as string | undefined) ?? defaultRunDirectory('demo');
    process.stderr.write(
      `teamtr demo: 3 agents, ${String((config.task as { name: string }).name)}, schedule teamtr → ${runDirectory}\n`,
    );
    const summary = await runTraining({ config, runDirectory, resume: false, quiet: false });
    if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stdout.write(formatSummary(summary));
    exitAfterInterruption(summary);
  });
}
