import { RunDirectoryError, type RunDirectoryRemedy } from '../trainer/run/run-directory-error.js';
import type { TeamtrError } from '../util/errors.js';

/** What to do about a run directory, in the command line's flags. */
export const cliRemedies: Readonly<Record<RunDirectoryRemedy, string>> = {
  anotherDirectory: 'choose another --run-dir',
  shorterPath: 'choose a shorter --run-dir',
  writableDisk: 'choose a --run-dir on a writable disk',
  permittedDirectory: 'choose a --run-dir you can write to, or fix its permissions',
  resumeOrAnother: 'continue it with --resume, or choose another --run-dir',
  startWithoutResume:
    'start it again without --resume (a plain run into the same --run-dir starts over)',
  givenRunDirectory: 'pass a directory `teamtr train` wrote',
  settingsThroughCommands:
    'undo the change or restore config.json from a backup (a run’s settings change only through `teamtr swap` and `teamtr train --resume --endpoint`, which record the change), or start a new run with the settings you want',
};

/** An error's message as the command line prints it: a run directory's remedy in flags. */
export function cliMessage(error: TeamtrError): string {
  return error instanceof RunDirectoryError
    ? `${error.problem}; ${cliRemedies[error.remedy]}`
    : error.message;
}
