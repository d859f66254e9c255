import type { Command } from 'commander';
import { formatTranscript } from '../../trainer/outputs/transcript-text.js';
import { readTranscripts, type Transcript } from '../../trainer/outputs/transcripts.js';
import { RunDirectory } from '../../trainer/run/run-directory.js';
import { TeamtrError } from '../../util/errors.js';

/** A positive integer flag, or undefined when not given. */
function positiveInteger(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed <= 0)
    throw new TeamtrError(`--${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return parsed;
}

/** The transcripts of one stage of a run (the latest by default), at most `count`. */
export function stageTranscripts(
  runDirectory: string,
  options: { stage?: number; count?: number },
): Transcript[] {
  const all = readTranscripts(runDirectory);
  if (all.length === 0)
    throw new TeamtrError(
      `${runDirectory} has no transcripts yet: a run writes a few from its first stage on (tracking.transcriptsPerStage, 4 by default)`,
    );
  const stages = [...new Set(all.map((transcript) => transcript.stage))];
  const stage = options.stage ?? stages[stages.length - 1]!;
  const chosen = all.filter((transcript) => transcript.stage === stage);
  if (chosen.length === 0)
    throw new TeamtrError(
      `${runDirectory} has no transcripts of stage ${stage}; it has stages ${stages[0]}–${stages[stages.length - 1]} (--stage N)`,
    );
  return chosen.slice(0, options.count ?? chosen.length);
}

export function register(program: Command): void {
  program
    .command('samples')
    .description(
      "print what a run's agents wrote: transcripts of a stage (every turn, its tokens and why it ended, the reward)",
    )
    .argument('<run-dir>', 'a run directory written by `teamtr train`')
    .option('--stage <n>', 'the stage to show (default: the latest)')
    .option('--n <count>', 'show at most this many transcripts (default: all of the stage)')
    .option('--json', 'print the transcripts as one JSON array on stdout')
    .action(async (runDirectory: string, flags: Record<string, string | boolean | undefined>) => {
      await RunDirectory.open(runDirectory);
      const transcripts = stageTranscripts(runDirectory, {
        stage: positiveInteger('stage', flags.stage),
        count: positiveInteger('n', flags.n),
      });
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(transcripts)}\n`
          : `${transcripts.map(formatTranscript).join('\n\n')}\n`,
      );
    });
}
