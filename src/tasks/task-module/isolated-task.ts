import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { describeThrown } from '../../util/describe-value.js';
import { TeamtrError } from '../../util/errors.js';
import { describeLimit, limitOf } from '../../util/limits.js';
import type { Problem, Task, VerifyResult } from '../types.js';
import type { TaskDescription, TaskReply, TaskRequest, TaskStartup } from './protocol.js';

/**
 * A task module's code runs on a worker thread, under limits, so that nothing it does can lose
 * the run: a reward (or a module-level await) that never settles and a synchronous infinite
 * loop are cut at their time limit, `process.exit` ends only the worker, a stray rejection or a
 * throw in a timer stops the worker instead of the process, and what it returns is bounded.
 * Each becomes a TaskModuleError naming the problem and the limit; the trainer stops as on any
 * bad input, and the run resumes once the module is fixed. A well-behaved module gives the same
 * rewards as in-process (numbers cross the thread unchanged).
 *
 * One call runs at a time, so each limit measures one call. Task.split is synchronous: the
 * caller waits for it in Atomics.wait (the worker signals through shared memory).
 */

export class TaskModuleError extends TeamtrError {}

/** A Task whose code lives on a worker; `close` stops the worker. */
export interface IsolatedTask extends Task {
  close(): Promise<void>;
}

export async function loadIsolatedTask(file: string, flag: string): Promise<IsolatedTask> {
  const host = new TaskWorkerHost(file, flag);
  const description = await host.started();
  return {
    ...description,
    split: (split, options) => host.callSync({ kind: 'split', split, options }) as Problem[],
    verify: (problem, answer) =>
      host.call(
        { kind: 'verify', problem, answer },
        `scoring problem "${problem.id}"`,
      ) as Promise<VerifyResult>,
    close: () => host.close(),
  };
}

const here = fileURLToPath(import.meta.url);

/**
 * worker.js beside this file in dist/. From source (tests, tsx), worker.ts: a worker does not
 * take the parent's tsx hooks for its own entry file, so a small JavaScript entry registers tsx
 * first and then imports it.
 */
function workerEntry(): { entry: string | URL; eval: boolean } {
  const file = path.join(path.dirname(here), `worker${path.extname(here)}`);
  if (path.extname(here) !== '.ts') return { entry: file, eval: false };
  const tsx = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(pathToFileURL(file).href)}); })`;
  return { entry: source, eval: true };
}

/** The caller's module loaders (`--import tsx`), without the flags that only a main script takes. */
export function loaderArguments(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  const withValue = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);
  for (let index = 0; index < execArgv.length; index++) {
    const argument = execArgv[index]!;
    if (withValue.has(argument) && index + 1 < execArgv.length)
      kept.push(argument, execArgv[++index]!);
    else if (/^--(import|require|loader|experimental-loader|conditions)=/.test(argument))
      kept.push(argument);
  }
  return kept;
}

interface PendingCall {
  id: number;
  what: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

class TaskWorkerHost {
  private readonly worker: Worker;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly syncChannel = new MessageChannel();
  private readonly callChannel = new MessageChannel();
  /** Why the worker is gone, once it is. */
  private stopped: string | null = null;
  private pending: PendingCall | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;

  constructor(
    file: string,
    private readonly flag: string,
  ) {
    const { syncChannel, callChannel } = this;
    const { entry, eval: evaluate } = workerEntry();
    this.worker = new Worker(entry, {
      eval: evaluate,
      workerData: {
        file,
        flag,
        signal: this.signal,
        syncPort: syncChannel.port2,
        callPort: callChannel.port2,
        resultCharacters: limitOf('taskResultCharacters'),
      },
      transferList: [syncChannel.port2, callChannel.port2],
      execArgv: loaderArguments(process.execArgv),
      resourceLimits: { maxOldGenerationSizeMb: limitOf('taskMemoryMiB') },
    });
    this.worker.on('error', (error) => this.stop(this.describeCrash(error)));
    this.worker.on('exit', (code) => this.stop(this.describeExit(code)));
    callChannel.port1.on('message', (reply: TaskReply | TaskStartup) => this.receive(reply));
    // Idle, the worker keeps nothing alive; a pending call's timer does. (Listening on a port
    // refs it, so this comes after.)
    this.worker.unref();
    callChannel.port1.unref();
    syncChannel.port1.unref();
  }

  /** Waits for the module to load (TEAMTR_TASK_LOAD_MS at most). */
  started(): Promise<TaskDescription> {
    return this.run(
      0,
      'loading the module',
      limitOf('taskLoadMilliseconds'),
      'taskLoadMilliseconds',
    )
      .then((description) => description as TaskDescription)
      .catch((error: Error) => {
        void this.close();
        throw error;
      });
  }

  /** One asynchronous call, after the ones before it (TEAMTR_TASK_CALL_MS at most). */
  call(
    request: Omit<Extract<TaskRequest, { kind: 'verify' }>, 'id'>,
    what: string,
  ): Promise<unknown> {
    const result = this.queue.then(() => {
      const id = this.nextId++;
      const started = this.run(id, what, limitOf('taskCallMilliseconds'), 'taskCallMilliseconds');
      this.callChannel.port1.postMessage({ ...request, id });
      return started;
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** One synchronous call: the caller sleeps until the worker answers or the limit passes. */
  callSync(request: Omit<Extract<TaskRequest, { kind: 'split' }>, 'id'>): unknown {
    const what = `splitting ${String(request.split)}`;
    this.throwIfStopped(what);
    const id = this.nextId++;
    Atomics.store(this.signal, 0, 0);
    this.syncChannel.port1.postMessage({ ...request, id });
    const waited = Atomics.wait(this.signal, 0, 0, limitOf('taskCallMilliseconds'));
    const reply = receiveMessageOnPort(this.syncChannel.port1)?.message as TaskReply | undefined;
    if (waited === 'timed-out' && reply === undefined) {
      const reason = this.timeLimitReason(what, 'taskCallMilliseconds');
      void this.worker.terminate();
      this.stopped ??= reason;
      throw new TaskModuleError(`${this.flag}: ${reason}`);
    }
    if (!reply?.ok) throw new TaskModuleError(`${this.flag}: ${what}: ${reply?.message}`);
    return reply.value;
  }

  async close(): Promise<void> {
    this.stopped ??= 'the task was closed';
    await this.worker.terminate();
  }

  private run(id: number, what: string, milliseconds: number, limit: LimitName): Promise<unknown> {
    this.throwIfStopped(what);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.stop(this.timeLimitReason(what, limit));
        void this.worker.terminate();
      }, milliseconds);
      const settle = (action: () => void) => {
        clearTimeout(timer);
        this.pending = null;
        action();
      };
      this.pending = {
        id,
        what,
        resolve: (value) => settle(() => resolve(value)),
        reject: (error) => settle(() => reject(error)),
      };
    });
  }

  private receive(message: TaskReply | TaskStartup): void {
    const pending = this.pending;
    if (pending === null) return;
    if ('kind' in message) {
      if (message.kind === 'ready') pending.resolve(message.description);
      else pending.reject(new TaskModuleError(message.message));
    } else if (message.id === pending.id) {
      if (message.ok) pending.resolve(message.value);
      else pending.reject(new TaskModuleError(`${this.flag}: ${message.message}`));
    }
  }

  private stop(reason: string): void {
    this.stopped ??= reason;
    this.pending?.reject(
      new TaskModuleError(`${this.flag}: ${this.stopped} (while ${this.pending.what})`),
    );
  }

  private throwIfStopped(what: string): void {
    if (this.stopped !== null)
      throw new TaskModuleError(
        `${this.flag}: cannot go on ${what}: ${this.stopped}; fix the module and run again (a training run resumes from its last checkpoint)`,
      );
  }

  private timeLimitReason(what: string, limit: LimitName): string {
    return limit === 'taskLoadMilliseconds'
      ? `the module did not finish loading within ${describeLimit(limit)}: a module-level await that never settles, or a loop at its top level?`
      : `${what} did not finish within ${describeLimit(limit)}: a reward that never settles, or a loop that never ends?`;
  }

  private describeExit(code: number): string {
    // A thread whose pending module-level await can never settle runs out of work and ends.
    if (this.pending?.id === 0)
      return `its worker stopped before the module finished loading (exit code ${code}): a module-level await that never settles, or process.exit at its top level?`;
    return `its worker stopped (exit code ${code}): the module called process.exit(${code}), or its top-level code ended the thread`;
  }

  private describeCrash(error: Error): string {
    if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY')
      return `the module ran out of memory: its heap may take ${describeLimit('taskMemoryMiB')}`;
    return `the module threw outside a call it was answering — a stray rejection, or a throw in a timer or callback: ${describeThrown(error)}`;
  }
}

type LimitName = 'taskLoadMilliseconds' | 'taskCallMilliseconds';
