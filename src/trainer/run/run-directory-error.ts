import { TeamtrError } from '../../util/errors.js';

/**
 * What a user can do about a run directory that cannot be used, as a kind rather than words:
 * the library says it in its own terms (`runDirectory`, `resume: true`), and the command line
 * in its flags (`--run-dir`, `--resume`), from one table each (cli/run-directory-remedies.ts).
 */
export type RunDirectoryRemedy =
  /** Use another directory (this one is taken, or cannot be one). */
  | 'anotherDirectory'
  /** A name in the path is longer than the file system allows. */
  | 'shorterPath'
  /** The disk is read-only. */
  | 'writableDisk'
  /** Writing there is not permitted. */
  | 'permittedDirectory'
  /** The directory holds a run with a checkpoint: resume it, or use another directory. */
  | 'resumeOrAnother'
  /** Nothing can be resumed: a new run into the same directory starts over. */
  | 'startWithoutResume'
  /** The path is not a run directory: give one that training wrote. */
  | 'givenRunDirectory'
  /** config.json was edited by hand: settings change only through the commands that record it. */
  | 'settingsThroughCommands';

/** The remedies in the library's terms (the options of `train`, `openRun`, `scheduleSwap`). */
export const libraryRemedies: Readonly<Record<RunDirectoryRemedy, string>> = {
  anotherDirectory: 'choose another run directory',
  shorterPath: 'choose a shorter run directory path',
  writableDisk: 'choose a run directory on a writable disk',
  permittedDirectory: 'choose a run directory you can write to, or fix its permissions',
  resumeOrAnother: 'continue it with `resume: true`, or choose another run directory',
  startWithoutResume:
    'start it again without `resume` (a new run into the same directory starts over)',
  givenRunDirectory: 'give a directory that `train` wrote',
  settingsThroughCommands:
    'undo the change or restore config.json from a backup (a run’s settings change only through `scheduleSwap` and `train` with `resume: true` and `endpoints`, which record the change), or start a new run with the settings you want',
};

/**
 * A run directory that cannot be created, continued or read as asked. `problem` says what is
 * wrong (naming `path`), `remedy` what to do; the message joins the problem to the library's
 * wording of the remedy, and the CLI words the remedy in its flags instead.
 */
export class RunDirectoryError extends TeamtrError {
  constructor(
    /** The directory or file the problem is about. */
    readonly path: string,
    readonly problem: string,
    readonly remedy: RunDirectoryRemedy,
  ) {
    super(`${problem}; ${libraryRemedies[remedy]}`);
  }
}
