import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { z } from 'zod';
import { openRegularFile } from '../util/bounded-file.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { describeLimit, limitOf } from '../util/limits.js';
import { datasetLines } from './dataset-lines.js';
import { formatPath, parseWithSchema } from '../util/schema.js';
import { oneRoundProtocol, sortedUnique } from './protocol.js';
import { seededSample, splitOf } from './splits.js';
import type { Problem, RoleDefinition, SplitName, BuiltInTask } from './types.js';
import { createVerifier, verifierSpecSchema } from './verifiers/index.js';

/**
 * User datasets, JSONL or Parquet (by the file's extension). JSONL: one JSON object per line,
 *
 *     {"prompt": "What is 7*6?", "answer": 42, "id": "q1", "split": "eval", "metadata": {...}}
 *
 * `prompt` (non-empty string) and `answer` (string or number) are required; `id` (unique),
 * `split` ("train" | "eval") and `metadata` (an object) are optional; other keys are an error, so
 * a misspelled key cannot be silently dropped. Blank lines are skipped. Lines without `split` are
 * assigned by hashing their id (or their prompt when there is no id): stable across runs and
 * files, and the eval share follows `evalFraction`. The file is read line by line.
 */

const requiredString = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is missing' : `must be ${what}`) })
    .refine((text) => text.trim().length > 0, `must be ${what}, not empty`);

const lineSchema = z.strictObject({
  prompt: requiredString('a non-empty string'),
  answer: z.union([requiredString('a non-empty string'), z.number()], {
    error: (issue) => (issue.input === undefined ? 'is missing' : 'must be a string or a number'),
  }),
  id: requiredString('a non-empty string').optional(),
  split: z.enum(['train', 'eval']).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

const defaultRoles: RoleDefinition[] = [
  {
    name: 'solver',
    prompt: 'You are the solver. Work through the problem and state your answer.',
    description: 'Proposes a solution.',
  },
  {
    name: 'checker',
    prompt: "You are the checker. Check the solver's work and correct any mistake.",
    description: 'Checks and corrects the proposal.',
  },
  {
    name: 'finalizer',
    prompt: "You are the finalizer. Write only the team's final answer, nothing else.",
    description: 'Writes the final answer.',
  },
];

export const jsonlLoadOptionsSchema = z.strictObject({
  /** "exact" | "numeric" | "math" | "choice", or an object with the verifier's options. */
  verifier: verifierSpecSchema,
  /** Share of lines without a `split` field assigned to eval. @default 0.1 */
  evalFraction: z.number().min(0).max(1).default(0.1),
  /** Roles of the default protocol, in speaking order. @default solver, checker, finalizer */
  roles: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        prompt: z.string(),
        description: z.string().default(''),
      }),
    )
    .min(1)
    .optional(),
  /** Generation budget of a turn, in characters. @default 2048 */
  maxTurnChars: z.number().int().positive().default(2048),
  /**
   * Which keys of a line hold the prompt and the answer, for datasets with their own names
   * (e.g. { prompt: "problem", answer: "solution" }). Without it, lines may also be GSM8K's
   * {question, answer: "… #### 42"} or chat {messages: [...], answer?}.
   */
  fields: z
    .strictObject({ prompt: z.string().min(1).optional(), answer: z.string().min(1).optional() })
    .default({}),
});

type FieldNames = { prompt?: string; answer?: string };

/**
 * verl's layout (the TeamTR authors' data too): `prompt` is a list of chat messages (the last
 * user message is the problem), the reference is `reward_model.ground_truth`; `extra_info`
 * may carry `split` and `index`; the rest becomes metadata.
 */
function verlLayout(record: Record<string, unknown>): Record<string, unknown> {
  const { prompt, reward_model: rewardModel, extra_info: extraInfo, answer, ...rest } = record;
  const messages = prompt as Array<{ role?: unknown; content?: unknown }>;
  const lastUser = [...messages].reverse().find((message) => message?.role === 'user')?.content;
  const extra = (extraInfo ?? {}) as { split?: unknown; index?: unknown };
  const split = extra.split === 'test' || extra.split === 'validation' ? 'eval' : extra.split;
  return {
    prompt: lastUser,
    answer: answer ?? (rewardModel as { ground_truth?: unknown } | undefined)?.ground_truth,
    ...(split === 'train' || split === 'eval' ? { split } : {}),
    ...(extra.index !== undefined ? { id: String(extra.index) } : {}),
    metadata: { ...rest, ...(extraInfo ? { extra_info: extraInfo } : {}) },
  };
}

/**
 * A line in one of the layouts datasets ship in, as {prompt, answer, …}:
 * - renamed fields (`fields`): their values move to `prompt` / `answer`;
 * - GSM8K: `question`, and the final answer after the last "####" of `answer`;
 * - chat: `messages` — the last user message is the prompt, and the answer is the line's
 *   `answer`, else the last assistant message.
 * Anything else is left as it is (and validated as the plain layout).
 */
function standardLayout(
  record: Record<string, unknown>,
  fields: FieldNames,
): Record<string, unknown> {
  const { prompt: promptKey, answer: answerKey } = fields;
  if (promptKey || answerKey) {
    const renamed = { ...record };
    for (const [key, target] of [
      [promptKey, 'prompt'],
      [answerKey, 'answer'],
    ] as const) {
      if (!key || key === target) continue;
      renamed[target] = record[key];
      delete renamed[key];
    }
    return renamed;
  }
  if (Array.isArray(record.prompt)) return verlLayout(record);
  if ('question' in record && !('prompt' in record)) {
    const { question, answer, ...rest } = record;
    const final =
      typeof answer === 'string' && answer.includes('####')
        ? answer.split('####').at(-1)!.trim()
        : answer;
    return { ...rest, prompt: question, answer: final };
  }
  if ('messages' in record && !('prompt' in record) && Array.isArray(record.messages)) {
    const { messages, answer, ...rest } = record;
    const list = messages as Array<{ role?: unknown; content?: unknown }>;
    const last = (role: string) =>
      [...list].reverse().find((message) => message?.role === role)?.content;
    return { ...rest, prompt: last('user'), answer: answer ?? last('assistant') };
  }
  return record;
}

export type JsonlLoadOptions = z.input<typeof jsonlLoadOptionsSchema>;

interface LoadedProblem {
  problem: Problem;
  split: SplitName;
}

/** Reads and validates a JSONL dataset; every problem is checked before the task is returned. */
export async function loadJsonlTask(path: string, options: JsonlLoadOptions): Promise<BuiltInTask> {
  const settings = parseWithSchema(jsonlLoadOptionsSchema, options, `jsonl task "${path}"`);
  const verifier = createVerifier(settings.verifier, `jsonl task "${path}" verifier`);
  const loaded = await readProblems(path, settings.evalFraction, settings.fields);
  const roles = settings.roles ?? defaultRoles;
  const characters = loaded.map(({ problem }) => problem.prompt + problem.answer).join('');
  const roleText = roles.map((role) => role.prompt).join('');
  return {
    name: 'jsonl',
    description: `${loaded.length} problems from ${path}, verified by "${verifier.name}"`,
    protocol: oneRoundProtocol(roles, settings.maxTurnChars),
    alphabet: sortedUnique(characters + roleText).replaceAll('\n', ''),
    split: (splitName, splitOptions) =>
      selectSplit(path, loaded, splitName, splitOptions, settings),
    verify: (problem, finalText) => verifier.verify(problem.answer, finalText),
  };
}

/** Each record of a dataset file with its place ("line 3", "row 3") and 1-based number. */
type RecordSource = AsyncGenerator<{ number: number; where: string; value: unknown }>;

async function* jsonlRecords(path: string): RecordSource {
  for await (const { number, text } of datasetLines(path)) {
    const line = number === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (line.trim() === '') continue;
    yield { number, where: `line ${number}`, value: parseJsonLine(path, number, line) };
  }
}

/** Rows of a Parquet file (hyparquet: a maintained pure-JavaScript reader, with compressors). */
async function* parquetRecords(path: string): RecordSource {
  let rows: Array<Record<string, unknown>>;
  try {
    const file = await asyncBufferFromFile(path);
    rows = (await parquetReadObjects({ file, compressors })) as Array<Record<string, unknown>>;
  } catch (error) {
    throw new FileFormatError(
      path,
      `is not a readable Parquet file (${(error as Error).message}); check the file, or convert it to JSONL`,
    );
  }
  for (const [index, row] of rows.entries())
    yield { number: index + 1, where: `row ${index + 1}`, value: plainValues(row) };
}

/** Parquet INT64 columns come back as BigInt: numbers (or strings when too large) instead. */
function plainValues(value: unknown): unknown {
  if (typeof value === 'bigint')
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(plainValues);
  if (value !== null && typeof value === 'object' && !(value instanceof Date))
    return Object.fromEntries(
      Object.entries(value).map(([key, entry]) => [key, plainValues(entry)]),
    );
  return value;
}

async function readProblems(
  path: string,
  evalFraction: number,
  fields: FieldNames,
): Promise<LoadedProblem[]> {
  await checkReadable(path);
  const records = path.toLowerCase().endsWith('.parquet')
    ? parquetRecords(path)
    : jsonlRecords(path);
  const loaded: LoadedProblem[] = [];
  const idPlaces = new Map<string, string>();
  for await (const { number, where, value } of records) {
    const record = validateRecord(path, where, value, fields);
    const id = record.id ?? (where.startsWith('row') ? `row-${number}` : `line-${number}`);
    const earlier = idPlaces.get(id);
    if (earlier !== undefined) {
      throw new FileFormatError(
        path,
        `${where}: id "${id}" is already used on ${earlier}; ids must be unique`,
      );
    }
    idPlaces.set(id, where);
    const problem: Problem = {
      id,
      prompt: record.prompt,
      answer: String(record.answer),
      metadata: { ...record.metadata, [where.startsWith('row') ? 'row' : 'line']: number },
    };
    loaded.push({
      problem,
      split: record.split ?? splitOf(record.id ?? record.prompt, evalFraction),
    });
  }
  if (loaded.length === 0) {
    throw new FileFormatError(
      path,
      'contains no problems; write one JSON object per line, e.g. {"prompt": "2+2", "answer": "4"}',
    );
  }
  return loaded;
}

/** A regular file (not a device or pipe) within TEAMTR_MAX_DATASET_BYTES, checked on its descriptor. */
async function checkReadable(path: string): Promise<void> {
  const { handle, size } = await openRegularFile(path, 'a .jsonl or .parquet dataset');
  await handle.close();
  if (size > limitOf('datasetBytes'))
    throw new FileFormatError(
      path,
      `is ${(size / 2 ** 30).toFixed(1)} GiB; a dataset is at most ${describeLimit('datasetBytes')}`,
    );
}

function parseJsonLine(path: string, lineNumber: number, line: string): unknown {
  const example = 'each line must be one JSON object such as {"prompt": "2+2", "answer": "4"}';
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new FileFormatError(
      path,
      `line ${lineNumber}: not valid JSON (${(error as Error).message}); ${example}`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new FileFormatError(path, `line ${lineNumber}: not a JSON object; ${example}`);
  }
  return value;
}

function validateRecord(
  path: string,
  where: string,
  value: unknown,
  fields: FieldNames,
): z.output<typeof lineSchema> {
  const result = lineSchema.safeParse(standardLayout(value as Record<string, unknown>, fields));
  if (result.success) return result.data;
  const problems = result.error.issues.map(describeLineIssue);
  throw new FileFormatError(path, `${where}: ${problems.join('; ')}`);
}

function describeLineIssue(issue: z.core.$ZodIssue): string {
  const where = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => `"${key}"`).join(', ');
    const valid = Object.keys(lineSchema.shape).join(', ');
    return `unknown key ${keys} (valid keys: ${valid}); put extra fields under "metadata"`;
  }
  if (issue.code === 'invalid_value') {
    const choices = issue.values.map((choice) => JSON.stringify(choice)).join(', ');
    return `"${where}" must be one of ${choices}`;
  }
  return `"${where}" ${issue.message}`;
}

function selectSplit(
  path: string,
  loaded: readonly LoadedProblem[],
  splitName: SplitName,
  splitOptions: { seed: number; count?: number },
  settings: { evalFraction: number },
): Problem[] {
  const problems = loaded
    .filter((entry) => entry.split === splitName)
    .map((entry) => entry.problem);
  if (problems.length === 0) {
    throw new TeamtrError(
      `${path} has no ${splitName} problems (evalFraction ${settings.evalFraction}); mark ` +
        `some lines with "split": "${splitName}" or change evalFraction`,
    );
  }
  return seededSample(problems, splitOptions);
}
