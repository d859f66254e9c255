import type { Command } from 'commander';
import { trainConfigSchema } from '../../trainer/config/train-config.js';
import { addConfigFlags, configFromFileAndFlags, readConfigFile } from '../config-flags.js';
import { formatSummary } from '../format.js';
import { nextSteps } from '../next-steps.js';
import { addResultFlags } from '../result-flag.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import {
  defaultRunDirectory,
  exitAfterInterruption,
  runTraining,
  writeRunResult,
} from './train.js';
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
  addResultFlags(command);
  // The flags' defaults shown are the demo's own (its file overrides the schema's).
  addConfigFlags(command, trainConfigSchema, {
    docs: schemaDocs.train,
    inReference: true,
    shown: { config: readConfigFile(demoConfigPath()), source: 'configs/demo.yaml' },
  });
  command.action(async (flags: Record<string, unknown>) => {
    const config = configFromFileAndFlags(trainConfigSchema, demoConfigPath(), flags);
    const runDirectory = (flags.runDir as string | undefined) ?? defaultRunDirectory('demo');
    process.stderr.write(
      `teamtr demo: 3 agents, ${String((config.task as { name: string }).name)}, schedule teamtr → ${runDirectory}\n`,
    );
    const summary = await runTraining({ config, runDirectory, resume: false, quiet: false });
    if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else process.stdout.write(`${formatSummary(summary)}${nextSteps(summary.runDirectory)}`);
    await writeRunResult(command, `The demo (seed ${summary.seed})`, summary);
    exitAfterInterruption(summary);
  });
}
