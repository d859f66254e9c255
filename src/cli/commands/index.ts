import type { Command } from 'commander';
import { register as registerBench } from './bench.js';
import { register as registerCompare } from './compare.js';
import { register as registerDashboard } from './dashboard.js';
import { register as registerDemo } from './demo.js';
import { register as registerEval } from './eval.js';
import { register as registerExport } from './export.js';
import { register as registerPretrain } from './pretrain.js';
import { register as registerReport } from './report.js';
import { register as registerSample } from './sample.js';
import { register as registerSamples } from './samples.js';
import { register as registerScaling } from './scaling.js';
import { register as registerScore } from './score.js';
import { register as registerServe } from './serve.js';
import { register as registerSwap } from './swap.js';
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
  registerScaling(program);
  registerPretrain(program);
  registerTheory(program);
  registerDashboard(program);
  registerReport(program);
  registerBench(program);
  registerSwap(program);
  registerSample(program);
  registerSamples(program);
  registerScore(program);
  registerServe(program);
  registerExport(program);
}
