import type { Command } from 'commander';

/**
 * Every subcommand lives in its own file in this folder and exports `register(program)`.
 * Add one import and one call here per command.
 */
export function registerCommands(program: Command): void {
  void program;
}
