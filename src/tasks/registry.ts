import { z } from 'zod';
import { ConfigError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import { arithmeticChainOptionsSchema, createArithmeticChainTask } from './arithmetic-chain.js';
import { conventionOptionsSchema, createConventionTask } from './convention.js';
import { jsonlLoadOptionsSchema, loadJsonlTask } from './jsonl.js';
import { createSolveCheckFinalTask, solveCheckFinalOptionsSchema } from './solve-check-final.js';
import { createStringPipelineTask, stringPipelineOptionsSchema } from './string-pipeline.js';
import type { BuiltInTask } from './types.js';
import { createWorkedChainTask, workedChainOptionsSchema } from './worked-chain.js';

const jsonlTaskSpecSchema = jsonlLoadOptionsSchema.extend({
  name: z.literal('jsonl'),
  /** Path of the .jsonl file (relative paths are resolved from the working directory). */
  path: z.string().min(1),
});

/**
 * A task defined in code (custom.ts): the run's config names it, and the caller passes the task
 * itself (`train({ task })`, `--task-module`); getTask alone cannot build it.
 */
const codeTaskSpecSchema = z.strictObject({
  name: z.literal('code'),
  /** The task's own name (TaskDefinition.name). */
  task: z.string().min(1),
});

/**
 * Every task the product knows, by the `name` of its spec. Adding a task means adding one entry
 * here; nothing else in the code base looks at task names.
 */
const taskTable = {
  'arithmetic-chain': {
    schema: arithmeticChainOptionsSchema,
    create: async (spec: z.output<typeof arithmeticChainOptionsSchema>) =>
      createArithmeticChainTask(spec),
  },
  'string-pipeline': {
    schema: stringPipelineOptionsSchema,
    create: async (spec: z.output<typeof stringPipelineOptionsSchema>) =>
      createStringPipelineTask(spec),
  },
  'solve-check-final': {
    schema: solveCheckFinalOptionsSchema,
    create: async (spec: z.output<typeof solveCheckFinalOptionsSchema>) =>
      createSolveCheckFinalTask(spec),
  },
  'worked-chain': {
    schema: workedChainOptionsSchema,
    create: async (spec: z.output<typeof workedChainOptionsSchema>) => createWorkedChainTask(spec),
  },
  convention: {
    schema: conventionOptionsSchema,
    create: async (spec: z.output<typeof conventionOptionsSchema>) => createConventionTask(spec),
  },
  jsonl: {
    schema: jsonlTaskSpecSchema,
    create: async ({ name: _name, path, ...options }: z.output<typeof jsonlTaskSpecSchema>) =>
      loadJsonlTask(path, options),
  },
  code: {
    schema: codeTaskSpecSchema,
    create: async ({ task }: z.output<typeof codeTaskSpecSchema>): Promise<BuiltInTask> => {
      throw new ConfigError(
        'task',
        `the run's task "${task}" is defined in code: pass it again (train({ task }) in TypeScript, --task-module FILE on the command line)`,
      );
    },
  },
} as const;

export type TaskName = keyof typeof taskTable;
/** The names a config may give (a run of a task defined in code records `code` itself). */
export const taskNames = (Object.keys(taskTable) as TaskName[]).filter((name) => name !== 'code');

/** Zod schema of a task spec (a discriminated union on `name`), for larger config schemas. */
export const taskSpecSchema = z.discriminatedUnion('name', [
  taskTable['arithmetic-chain'].schema,
  taskTable['string-pipeline'].schema,
  taskTable['solve-check-final'].schema,
  taskTable['worked-chain'].schema,
  taskTable.convention.schema,
  taskTable.jsonl.schema,
  taskTable.code.schema,
]);

export type TaskSpec = z.input<typeof taskSpecSchema>;

/**
 * Builds a task from its spec, e.g. `{ name: 'arithmetic-chain', difficulty: 3 }` or
 * `{ name: 'jsonl', path: 'data/qa.jsonl', verifier: 'numeric' }`. Unknown names and options
 * fail with a ConfigError listing the valid choices; `source` prefixes the error's path.
 */
export async function getTask(spec: unknown, source = 'task'): Promise<BuiltInTask> {
  const name =
    spec !== null && typeof spec === 'object' && 'name' in spec
      ? (spec as { name: unknown }).name
      : undefined;
  if (typeof name !== 'string' || !Object.hasOwn(taskTable, name)) {
    throw new ConfigError(
      `${source}.name`,
      `${name === undefined ? 'missing' : `unknown task ${JSON.stringify(name)}`} ` +
        `(valid: ${taskNames.join(', ')})`,
    );
  }
  const entry = taskTable[name as TaskName];
  const options = parseWithSchema(entry.schema, spec, source);
  return (entry.create as (parsed: typeof options) => Promise<BuiltInTask>)(options);
}
