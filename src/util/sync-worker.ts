import { Worker } from 'node:worker_threads';

/**
 * Runs a function on a worker thread and waits for it synchronously, at most `milliseconds`:
 * for a check that may never finish (a regular expression that backtracks exponentially) in
 * code that cannot await (a constructor). The caller's thread sleeps in Atomics.wait; the
 * worker writes its JSON answer into shared memory. A worker still busy when time is up is
 * terminated, so the computation cannot outlive its limit.
 */
export interface SyncWorkerTask {
  /**
   * The source of a CommonJS function `(input, require) => result`, run on the worker; `result`
   * must be JSON. It cannot close over the caller's variables: pass what it needs in `input`.
   */
  functionSource: string;
  input: unknown;
  milliseconds: number;
  /** Room for the JSON answer. @default 64 KiB */
  answerBytes?: number;
}

export type SyncWorkerOutcome =
  | { status: 'done'; value: unknown }
  | { status: 'threw'; message: string }
  | { status: 'timed-out' };

const workerSource = `
const { workerData } = require('node:worker_threads');
const { input, signal, answer, functionSource } = workerData;
let outcome;
try {
  outcome = { status: 'done', value: (0, eval)('(' + functionSource + ')')(input, require) };
} catch (error) {
  outcome = { status: 'threw', message: String((error && error.message) || error) };
}
let bytes = Buffer.from(JSON.stringify(outcome));
if (bytes.length > answer.length)
  bytes = Buffer.from(JSON.stringify({ status: 'threw', message: 'the answer is too large' }));
answer.set(bytes);
Atomics.store(signal, 1, bytes.length);
Atomics.store(signal, 0, 1);
Atomics.notify(signal, 0);
`;

export function runWorkerSync(task: SyncWorkerTask): SyncWorkerOutcome {
  const signal = new Int32Array(new SharedArrayBuffer(8));
  const answer = new Uint8Array(new SharedArrayBuffer(task.answerBytes ?? 64 * 1024));
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { input: task.input, signal, answer, functionSource: task.functionSource },
    // The check's own code only: no loader hooks or flags of the caller.
    execArgv: [],
    stdout: true,
    stderr: true,
  });
  worker.unref();
  worker.on('error', () => {});
  try {
    const waited = Atomics.wait(signal, 0, 0, task.milliseconds);
    if (waited === 'timed-out' && Atomics.load(signal, 0) === 0) return { status: 'timed-out' };
    const length = Atomics.load(signal, 1);
    return JSON.parse(
      Buffer.from(answer.subarray(0, length)).toString('utf8'),
    ) as SyncWorkerOutcome;
  } finally {
    void worker.terminate();
  }
}
