import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands/index.js';
import { reportError } from './errors.js';
import { teamtrVersion } from '../util/package-root.js';

/** The `teamtr` program with every command: what `main` runs and docs/reference/cli.md shows. */
export function createProgram(): Command {
  const program = new Command('teamtr')
    .description('TeamTR: trust-region fine-tuning for teams of language-model agents')
    .version(teamtrVersion())
    .exitOverride()
    .showHelpAfterError();
  registerCommands(program);
  return program;
}

/** Entry point of the `teamtr` binary; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = createProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode;
    }
    return reportError(error);
  }
}
