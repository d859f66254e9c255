import { z } from 'zod';
import { ConfigError } from './errors.js';

/**
 * Validates `value` against a strict zod schema and returns the parsed value (defaults filled
 * in), or throws a ConfigError naming the offending path. Unknown keys list the valid ones;
 * bad enum values list the valid choices. `source` (a file name or "--flag") prefixes paths.
 */
export function parseWithSchema<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  source: string,
): z.output<Schema> {
  return parseOr(schema, value, (issues) => {
    const messages = issues.map((issue) => describeIssue(schema, issue, value));
    return new ConfigError(
      source,
      messages.length === 1 ? messages[0]! : `\n  - ${messages.join('\n  - ')}`,
    );
  });
}

/**
 * `value` parsed by `schema` (defaults filled in), or else the error `refuse` builds from zod's
 * issues (at least one), thrown. Each caller words its refusal for its reader: a config file's
 * ConfigError, an HTTP 400, a service's malformed answer.
 */
export function parseOr<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  refuse: (issues: readonly [z.core.$ZodIssue, ...z.core.$ZodIssue[]]) => Error,
): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const [first, ...rest] = result.error.issues;
  throw refuse([first!, ...rest]);
}

export function formatPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const part of path) {
    if (typeof part === 'number') text += `[${part}]`;
    else text += text ? `.${String(part)}` : String(part);
  }
  return text;
}

function describeIssue(schema: z.ZodType, issue: z.core.$ZodIssue, input: unknown): string {
  const where = formatPath(issue.path);
  const prefix = where ? `${where}: ` : '';
  if (issue.code === 'unrecognized_keys') {
    const valid = objectKeysAt(schema, issue.path);
    const validText = valid ? ` (valid keys: ${valid.join(', ')})` : '';
    return `${prefix}unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys
      .map((key) => `"${key}"`)
      .join(', ')}${validText}`;
  }
  if (issue.code === 'invalid_value' && 'values' in issue) {
    return `${prefix}got ${JSON.stringify(valueAt(input, issue.path))} (valid: ${issue.values
      .map((choice) => JSON.stringify(choice))
      .join(', ')})`;
  }
  return `${prefix}${issue.message}`;
}

/** Walks a schema along a data path to the object schema there, and lists its keys. */
function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] | null {
  let current: z.ZodType | undefined = unwrap(schema);
  for (const part of path) {
    if (!current) return null;
    if (current instanceof z.ZodObject) current = unwrap(current.shape[String(part)]);
    else if (current instanceof z.ZodArray) current = unwrap(current.element as z.ZodType);
    else if (current instanceof z.ZodRecord) current = unwrap(current.valueType as z.ZodType);
    else return null;
  }
  return current instanceof z.ZodObject ? Object.keys(current.shape) : null;
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let current = schema;
  for (let depth = 0; current && depth < 16; depth++) {
    const definition = current._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if (definition.innerType) current = definition.innerType;
    else if (definition.type === 'pipe' && definition.in) current = definition.in;
    else break;
  }
  return current;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}
