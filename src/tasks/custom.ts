import { createHash } from 'node:crypto';
import { describeThrown, describeValue } from '../util/describe-value.js';
import { TeamtrError } from '../util/errors.js';
import { describeLimit, limitOf } from '../util/limits.js';
import { oneRoundProtocol, sortedUnique } from './protocol.js';
import { seededSample } from './splits.js';
import type {
  Problem,
  RoleDefinition,
  SplitName,
  Task,
  VerifyDetails,
  VerifyResult,
} from './types.js';

/** What a reward function returns: a number in [0, 1], or one with details for the logs. */
export type RewardValue =
  number | { reward: number; correct?: boolean; details?: Partial<VerifyDetails> };

/** A problem as a task definition gives it (ids default to `<split>-<index>`). */
export interface ProblemInput {
  id?: string;
  prompt: string;
  answer: string | number;
  metadata?: Record<string, unknown>;
}

/**
 * A task written in code: its problems and a reward function. `defineTask` turns it into a
 * Task the trainer, `evaluate` and `compare` accept (`train({ config, task })`).
 */
export interface TaskDefinition {
  /** Names the task in runs, logs and errors. */
  name: string;
  description?: string;
  problems: { train: readonly ProblemInput[]; eval: readonly ProblemInput[] };
  /**
   * Scores the answer turn's text: a number in [0, 1] (1 = correct), or `{ reward, details }`.
   * May be async (e.g. run tests, call a checker). A throw or a non-number is an error that
   * names the problem.
   */
  reward: (input: { problem: Problem; answer: string }) => RewardValue | Promise<RewardValue>;
  /** Roles of the default protocol, in speaking order. @default one role, "solver" */
  roles?: readonly Pick<RoleDefinition, 'name' | 'prompt'>[];
  /** Generation budget of a turn, in characters. @default 2048 */
  maxTurnChars?: number;
}

const defaultRoles = [{ name: 'solver', prompt: '' }];

/** A Task from a definition in code; its problems are checked once, here. */
export function defineTask(definition: TaskDefinition): Task {
  const { name } = definition;
  if (typeof name !== 'string' || name.trim() === '')
    throw new TeamtrError('defineTask: `name` must be a non-empty string');
  if (typeof definition.reward !== 'function')
    throw new TeamtrError(
      `task "${name}": \`reward\` must be a function (problem, answer) → [0, 1]`,
    );
  const splits = {
    train: checkedProblems(name, 'train', definition.problems?.train),
    eval: checkedProblems(name, 'eval', definition.problems?.eval),
  };
  const roles = (definition.roles ?? defaultRoles).map((role) => ({
    name: role.name,
    prompt: role.prompt,
    description: '',
  }));
  const text = [...splits.train, ...splits.eval].map((problem) => problem.prompt + problem.answer);
  return {
    name,
    description:
      definition.description ??
      `${splits.train.length} train and ${splits.eval.length} eval problems, scored in code`,
    protocol: oneRoundProtocol(roles, definition.maxTurnChars ?? 2048),
    alphabet: sortedUnique(text.join('') + roles.map((role) => role.prompt).join('')).replaceAll(
      '\n',
      '',
    ),
    split: (split, options) => seededSample(splits[split], options),
    verify: (problem, answer) => scoreWith(definition, problem, answer),
  };
}

function checkedProblems(
  task: string,
  split: SplitName,
  problems: readonly ProblemInput[] | undefined,
): Problem[] {
  if (!Array.isArray(problems) || problems.length === 0)
    throw new TeamtrError(`task "${task}": problems.${split} must be a non-empty array`);
  const ids = new Set<string>();
  return problems.map((input, index) => {
    const where = `task "${task}": problems.${split}[${index}]`;
    if (typeof input?.prompt !== 'string' || input.prompt.trim() === '')
      throw new TeamtrError(`${where}.prompt must be a non-empty string`);
    if (typeof input.answer !== 'string' && typeof input.answer !== 'number')
      throw new TeamtrError(`${where}.answer must be a string or a number`);
    const id = input.id ?? `${split}-${index}`;
    if (ids.has(id)) throw new TeamtrError(`${where}.id "${id}" is used twice in ${split}`);
    ids.add(id);
    return { id, prompt: input.prompt, answer: String(input.answer), metadata: input.metadata };
  });
}

/**
 * One reward call. User code may throw anything (undefined, a BigInt, an object whose getters
 * throw) and return anything: every case is an error naming the problem, in a few words. An
 * async reward that never settles is cut at TEAMTR_TASK_CALL_MS (a synchronous loop cannot be
 * cut in-process: `--task-module` runs the module on a worker for that).
 */
async function scoreWith(
  definition: TaskDefinition,
  problem: Problem,
  answer: string,
): Promise<VerifyResult> {
  const where = `task "${definition.name}": the reward function`;
  let value: RewardValue;
  try {
    const returned = definition.reward({ problem, answer });
    value = isThenable(returned)
      ? await withinTimeLimit(returned, `${where} did not settle on problem "${problem.id}"`)
      : returned;
  } catch (error) {
    if (error instanceof TaskTimeLimitError) throw error;
    throw new TeamtrError(`${where} threw on problem "${problem.id}": ${describeThrown(error)}`);
  }
  const reward = readReward(value, `${where} returned`, problem);
  const details = safeDetails(value);
  return {
    reward,
    correct: typeof value === 'number' ? reward === 1 : (readCorrect(value) ?? reward === 1),
    details: {
      verifier: details.verifier ?? `reward function of "${definition.name}"`,
      extracted: details.extracted ?? answer,
      expected: details.expected ?? problem.answer,
      explanation: details.explanation ?? '',
    },
  };
}

/** A call into user code that ran past TEAMTR_TASK_CALL_MS. */
export class TaskTimeLimitError extends TeamtrError {}

function isThenable(value: unknown): value is PromiseLike<RewardValue> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

async function withinTimeLimit<Value>(promise: PromiseLike<Value>, what: string): Promise<Value> {
  const milliseconds = limitOf('taskCallMilliseconds');
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TaskTimeLimitError(
            `${what} within ${describeLimit('taskCallMilliseconds')}; make it finish, or raise the limit`,
          ),
        ),
      milliseconds,
    );
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The reward in [0, 1] of what the function returned, or an error saying what it was. */
function readReward(value: unknown, what: string, problem: Problem): number {
  let reward: unknown;
  try {
    reward = typeof value === 'number' ? value : (value as { reward?: unknown } | null)?.reward;
  } catch {
    reward = undefined;
  }
  if (typeof reward !== 'number' || !Number.isFinite(reward) || reward < 0 || reward > 1)
    throw new TeamtrError(
      `${what} ${describeValue(value)} on problem "${problem.id}"; it must return a number in [0, 1] or { reward, details }`,
    );
  return reward;
}

function readCorrect(value: Exclude<RewardValue, number>): boolean | undefined {
  try {
    return typeof value.correct === 'boolean' ? value.correct : undefined;
  } catch {
    return undefined;
  }
}

/** The details object, with only string fields kept (a throwing getter reads as absent). */
function safeDetails(value: RewardValue): Partial<VerifyDetails> {
  if (typeof value === 'number') return {};
  const read = (key: keyof VerifyDetails): string | undefined => {
    try {
      const entry = (value.details as Record<string, unknown> | undefined)?.[key];
      return typeof entry === 'string' ? entry : undefined;
    } catch {
      return undefined;
    }
  };
  const details: Partial<Record<keyof VerifyDetails, string>> = {};
  for (const key of ['verifier', 'extracted', 'expected', 'explanation'] as const) {
    const entry = read(key);
    if (entry !== undefined) details[key] = entry;
  }
  return details;
}

/**
 * A fingerprint of a task's data: its name and every problem of both splits (ids, prompts,
 * answers). A resumed run refuses a task whose fingerprint changed.
 */
export function taskFingerprint(task: Task): string {
  const hash = createHash('sha256').update(task.name);
  for (const split of ['train', 'eval'] as const)
    for (const problem of everyProblem(task, split))
      hash.update(
        `\u0000${split}\u0000${problem.id}\u0000${problem.prompt}\u0000${problem.answer}`,
      );
  return hash.digest('hex');
}

/**
 * Every problem of a split; a generated task (no natural size) gives its first 256 draws of
 * seed 0, repeats allowed (a small problem space, such as worked-chain's 810 prompts, may hold
 * fewer than 256 distinct eval problems).
 */
function everyProblem(task: Task, split: SplitName): Problem[] {
  try {
    return task.split(split, { seed: 0 });
  } catch {
    return task.split(split, { seed: 0, count: 256, unique: false });
  }
}
