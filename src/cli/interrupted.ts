/**
 * Resolves on the first Ctrl-C or SIGTERM, then stops listening for both. Call it before a
 * server prints that it is listening: a supervisor may send SIGTERM as soon as it reads that
 * line, and a SIGTERM with no handler yet kills the process without closing the server.
 */
export function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
