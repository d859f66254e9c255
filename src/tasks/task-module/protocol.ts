import type { MessagePort } from 'node:worker_threads';
import type { Task } from '../types.js';

/** What the host gives the task worker (worker.ts) when it starts it. */
export interface TaskWorkerData {
  file: string;
  /** How the user named the module, for errors: `--task-module task.ts`. */
  flag: string;
  /** [0]: set to 1 by the worker when a reply on `syncPort` is ready. */
  signal: Int32Array;
  syncPort: MessagePort;
  callPort: MessagePort;
  resultCharacters: number;
}

/** The task's data, sent once: everything but its functions. */
export type TaskDescription = Pick<Task, 'name' | 'description' | 'protocol' | 'alphabet'>;

export type TaskRequest =
  | { id: number; kind: 'split'; split: unknown; options: unknown }
  | { id: number; kind: 'verify'; problem: unknown; answer: unknown };

export type TaskReply =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

export type TaskStartup =
  { kind: 'ready'; description: TaskDescription } | { kind: 'failed'; message: string };
