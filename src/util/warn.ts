/**
 * A warning for the person running teamtr, through Node's warning channel: printed once to
 * stderr as "(node:PID) [TEAMTR_…] Warning: …", and seen by programs as a process 'warning'
 * event (`process.on('warning', …)`). Each key warns once per process, so loading the same
 * model for every agent of a team says it once.
 */
const warned = new Set<string>();

export function warnOnce(key: string, code: string, message: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  process.emitWarning(message, { code });
}
