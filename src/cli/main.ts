import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands/index.js';
import { reportError } from './errors.js';

/** Entry point of the `teamtr` binary; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = new Command('teamtr')
    .description('TeamTR: trust-region fine-tuning for teams of language-model agents')
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError();
  registerCommands(program);
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
