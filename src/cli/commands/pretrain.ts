import path from 'node:path';
import type { Command } from 'commander';
import { pretrain, pretrainConfigSchema, pretrainOutputName } from '../../pretrain/pretrain.js';
import { defaultPretrainDirectory } from '../../models/load.js';
import { addConfigFlags, configFromFlags } from '../config-flags.js';
import { schemaDocs } from '../reference/schema-docs.generated.js';
import { ProgressReporter } from '../progress.js';

export function register(program: Command): void {
  const command = program
    .command('pretrain')
    .description(
      'train the tiny per-role base models of a built-in task on noisy synthetic demonstrations',
    )
    .option('-c, --config <file>', 'config file (YAML or JSON)')
    .option(
      '--out <dir>',
      'output directory (default: models/<task> in a checkout, ~/.cache/teamtr/models/<task> for an installed package; both serve builtin:<task>/role-<r>; a chat model: builtin:<chat.name>)',
    )
    .option('--json', 'print one JSON result object on stdout');
  addConfigFlags(command, pretrainConfigSchema, { skip: ['model'], docs: schemaDocs.pretrain });
  command.action(async (flags: Record<string, unknown>) => {
    const config = configFromFlags(pretrainConfigSchema, flags);
    const output =
      (flags.out as string | undefined) ??
      path.join(defaultPretrainDirectory(), pretrainOutputName(config));
    const progress = new ProgressReporter(false);
    let current = -1;
    const result = await pretrain(config, output, (event) => {
      if (event.index !== current) {
        progress.stop();
        current = event.index;
        progress.start(
          `pretrain ${event.model} (${event.index + 1}/${event.models})`,
          event.steps,
          0,
          'steps',
        );
      }
      progress.update(event.step, `loss ${event.loss.toFixed(3)}`, event.steps);
    });
    progress.stop();
    if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else
      process.stdout.write(
        `Saved ${result.directories.length} base models for ${result.task}:\n${result.directories.map((directory, index) => `  ${directory} (final loss ${result.finalLosses[index]!.toFixed(3)})`).join('\n')}\n`,
      );
  });
}
