import type { Command } from 'commander';
import { register as registerTheory } from './theory.js';

/**
 * Every subcommand lives in its own file in this folder and exports `register(program)`.
 * Add one import and one call here per command.
 */
export function registerCommands(program: Command): void {
  void program;
  registerTheory(program);
}
