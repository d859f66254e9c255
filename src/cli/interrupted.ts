import { constants } from 'node:os';

/**
 * The signals that ask a command to stop: Ctrl-C (SIGINT), a supervisor or `kill` (SIGTERM),
 * and a closed terminal or SSH session (SIGHUP). Each is handled the same way: a training run
 * finishes its stage, saves a checkpoint and its summary, and exits 130; a server closes.
 */
export const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof stopSignals)[number];

/** How a person would name what happened. */
export const stopSignalNames: Readonly<Record<StopSignal, string>> = {
  SIGINT: 'interrupted (Ctrl-C)',
  SIGTERM: 'asked to stop (SIGTERM)',
  SIGHUP: 'the terminal closed (SIGHUP)',
};

/** 128 + the signal's number: the exit code of a process the signal ended. */
export function signalExitCode(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

/**
 * Calls `onStop` on the first stop signal; a second one exits at once (128 + its number), for
 * a person who does not want to wait. Returns a function that stops listening. From then on,
 * output that went away (a closed terminal, `| head`) no longer ends the process: writing to it
 * fails quietly, so the work in hand can still be saved.
 */
export function onStopSignals(onStop: (signal: StopSignal) => void): () => void {
  toleratesClosedOutput();
  let stopping = false;
  const handle = (signal: StopSignal): void => {
    if (stopping) process.exit(signalExitCode(signal));
    stopping = true;
    onStop(signal);
  };
  for (const signal of stopSignals) process.on(signal, handle);
  return () => {
    for (const signal of stopSignals) process.off(signal, handle);
  };
}

/**
 * Resolves on the first stop signal, then stops listening. Call it before a server prints that
 * it is listening: a supervisor may send SIGTERM as soon as it reads that line, and a signal
 * with no handler yet kills the process without closing the server.
 */
export function untilInterrupted(): Promise<StopSignal> {
  return new Promise((resolve) => {
    const stop = onStopSignals((signal) => {
      stop();
      resolve(signal);
    });
  });
}

let closedOutputTolerated = false;

/**
 * Writes to a closed terminal or pipe fail with EIO or EPIPE, and an unhandled stream error
 * ends the process: nobody is left to read that output, so those errors are dropped (once per
 * process; other errors still surface).
 */
function toleratesClosedOutput(): void {
  if (closedOutputTolerated) return;
  closedOutputTolerated = true;
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EIO' && error.code !== 'EPIPE') throw error;
    });
}
