import type { Command } from 'commander';
import { register as registerCompare } from './compare.js';
import { register as registerDemo } from './demo.js';
import { register as registerEval } from './eval.js';
import { register as registerPretrain } from './pretrain.js';
import { register as registerTheory } from './theory.js';
import { register as registerTrain } from './train.js';

/**
 * Every subcommand lives in its own file in this folder and exports `register(program)`.
 * Add one import and one call here per command.
 */
export function registerCommands(program: Command): void {
  registerDemo(program);
  registerTrain(program);
  registerEval(program);
  registerCompare(program);
  registerPretrain(program);
  registerTheory(program);
}
