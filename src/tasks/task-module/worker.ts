import { workerData, type MessagePort } from 'node:worker_threads';
import { describeThrown, describeValue } from '../../util/describe-value.js';
import { defineTask, type TaskDefinition } from '../custom.js';
import type { Problem, SplitName, SplitOptions, Task } from '../types.js';
import { importTaskExport } from './import-module.js';
import type { TaskDescription, TaskReply, TaskRequest, TaskWorkerData } from './protocol.js';

/**
 * The worker a `--task-module` runs on (see isolated-task.ts): it loads the module, turns its
 * export into a Task and answers the trainer's calls. Splits come over `syncPort` (the caller
 * waits in Atomics.wait, since Task.split is synchronous); rewards over `callPort`.
 */

const data = workerData as TaskWorkerData;

function asTask(value: unknown): Task {
  if (value === null || typeof value !== 'object')
    throw new Error(
      `export default a task — { name, problems: { train, eval }, reward } or a Task object (got ${value === undefined ? 'no default or `task` export' : describeValue(value)})`,
    );
  const record = value as Partial<Task>;
  return typeof record.split === 'function' && typeof record.verify === 'function'
    ? (record as Task)
    : defineTask(value as TaskDefinition);
}

function describeTask(task: Task): TaskDescription {
  return structuredClone({
    name: task.name,
    description: task.description,
    protocol: task.protocol,
    alphabet: task.alphabet,
  });
}

function replySync(reply: TaskReply): void {
  data.syncPort.postMessage(reply);
  Atomics.store(data.signal, 0, 1);
  Atomics.notify(data.signal, 0);
}

async function verify(task: Task, problem: Problem, answer: string): Promise<unknown> {
  const result = await task.verify(problem, answer);
  const text = JSON.stringify(result);
  if (text === undefined || text.length > data.resultCharacters)
    throw new Error(
      `verify returned ${text === undefined ? describeValue(result) : `${text.length} characters of JSON`}; a result is at most ${data.resultCharacters} (TEAMTR_MAX_TASK_RESULT raises it)`,
    );
  return result;
}

function serve(task: Task, port: MessagePort, run: (request: TaskRequest) => Promise<TaskReply>) {
  port.on('message', (request: TaskRequest) => {
    void run(request).then((reply) =>
      port === data.syncPort ? replySync(reply) : port.postMessage(reply),
    );
  });
}

async function answer(task: Task, request: TaskRequest): Promise<TaskReply> {
  try {
    const value =
      request.kind === 'split'
        ? task.split(request.split as SplitName, request.options as SplitOptions)
        : await verify(task, request.problem as Problem, request.answer as string);
    structuredClone(value);
    return { id: request.id, ok: true, value };
  } catch (error) {
    return { id: request.id, ok: false, message: describeThrown(error, 2000) };
  }
}

async function start(): Promise<void> {
  let task: Task;
  try {
    task = asTask(await importTaskExport(data.file, data.flag));
    data.callPort.postMessage({ kind: 'ready', description: describeTask(task) });
  } catch (error) {
    const message = describeThrown(error, 4000);
    data.callPort.postMessage({
      kind: 'failed',
      message: message.startsWith(data.flag) ? message : `${data.flag}: ${message}`,
    });
    return;
  }
  serve(task, data.syncPort, (request) => answer(task, request));
  serve(task, data.callPort, (request) => answer(task, request));
}

void start();
