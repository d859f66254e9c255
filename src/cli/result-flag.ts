import type { Command } from 'commander';
import {
  currentCommit,
  currentHost,
  resultFormat,
  writeResultFile,
  type ResultTable,
} from '../report/result-file.js';
import { shellWord } from './next-steps.js';
import { packagePath } from './package-path.js';

/**
 * `--result FILE` on the commands that measure something docs/results.md shows: the command
 * writes what it measured as a result file (src/report/result-file.ts), with the command line
 * that reproduces it, this host and the commit. `npm run results` renders the page from them.
 */
export function addResultFlags(command: Command): Command {
  return command
    .option(
      '--result <file>',
      'also write what this command measured as a result file (docs/results/<name>.json; `npm run results` renders docs/results.md from them)',
    )
    .option(
      '--quiet-host',
      'with --result: record that nothing else ran on the machine meanwhile (timings are then comparable)',
    );
}

/**
 * The command line that reproduces this invocation from the repository root: the command and
 * every option given on the command line (in the command's order), as the shell takes it.
 */
export function reproducingCommand(command: Command): string {
  const words = ['node', 'bin/teamtr.js', command.name()];
  for (const option of command.options) {
    const key = option.attributeName();
    if (command.getOptionValueSource(key) !== 'cli' || !option.long) continue;
    const value: unknown = command.getOptionValue(key);
    words.push(option.long);
    if (value === true) continue;
    words.push(Array.isArray(value) ? value.join(',') : String(value));
  }
  words.push(...command.args);
  return words.map(shellWord).join(' ');
}

/** Writes the result file `--result` names, if it was given. */
export async function writeCommandResult(
  command: Command,
  measured: {
    title: string;
    tables: ResultTable[];
    notes: string[];
    wallSeconds: number | null;
    data?: unknown;
  },
): Promise<void> {
  const flags = command.opts() as { result?: string; quietHost?: boolean };
  if (flags.result === undefined) return;
  await writeResultFile(flags.result, {
    format: resultFormat,
    command: reproducingCommand(command),
    commit: currentCommit(packagePath()),
    measuredAt: new Date().toISOString(),
    host: currentHost({ quiet: Boolean(flags.quietHost) }),
    ...measured,
  });
  process.stderr.write(`wrote ${flags.result} (render docs/results.md with: npm run results)\n`);
}
