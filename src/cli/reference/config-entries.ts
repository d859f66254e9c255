import { z } from 'zod';

/**
 * The config schema read as a list of documented settings: each key's path, type, default and
 * meaning. The meaning is the key's doc comment in the schema's source (copied by
 * scripts/reference-docs.mjs into schema-docs.generated.ts), so `--help`, the configuration
 * reference (docs/reference/config.md) and the published .d.ts all say the same.
 */
export interface ConfigEntry {
  /** Key of the docs: `rollout.groupSize`, `agents.lora.rank`, `task(jsonl).path`. */
  docsKey: string;
  /** As a reader writes it: `rollout.groupSize`, `agents[].lora.rank`, `task.path`. */
  path: string;
  /** The property names from the root, for flags (`['rollout', 'groupSize']`). */
  keys: string[];
  /** For a member of a union told apart by `name`: that name (`jsonl`). */
  variant: string | null;
  type: string;
  /** The default as a value (`0.01`), or in words (`the task's longest turn + 2`). */
  default: string | null;
  /** The default is the doc comment's words, not a value. */
  defaultInWords: boolean;
  description: string | null;
  /** An object whose keys follow as entries of their own. */
  hasChildren: boolean;
}

export type ConfigDocs = Readonly<Record<string, { text?: string; default?: string }>>;

interface Definition {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  defaultValue?: unknown;
  options?: z.ZodType[];
  element?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, string | number>;
  values?: unknown[];
  shape?: Record<string, z.ZodType>;
  checks?: Array<{ _zod: { def: CheckDefinition } }>;
}

interface CheckDefinition {
  check: string;
  value?: number;
  inclusive?: boolean;
  format?: string;
  minimum?: number;
  maximum?: number;
}

const definition = (schema: z.ZodType): Definition => schema._zod.def as unknown as Definition;

/** Wrappers a key's schema may sit in, which say nothing of its type. */
const wrappers = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'catch']);

/** The schema under optional/default/prefault/… and a transform's input. */
export function unwrapSchema(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let depth = 0; depth < 16; depth++) {
    const found = definition(current);
    const next = wrappers.has(found.type)
      ? found.innerType
      : found.type === 'pipe'
        ? found.in
        : null;
    if (!next) return current;
    current = next;
  }
  return current;
}

/** The schema's plain default (a number, string, boolean or list), if it has one. */
export function schemaDefault(schema: z.ZodType): unknown {
  let current = schema;
  for (let depth = 0; depth < 16; depth++) {
    const found = definition(current);
    if (found.type === 'default') {
      const value = found.defaultValue;
      return typeof value === 'object' && value !== null && !Array.isArray(value)
        ? undefined
        : value;
    }
    const next = wrappers.has(found.type)
      ? found.innerType
      : found.type === 'pipe'
        ? found.in
        : null;
    if (!next) return undefined;
    current = next;
  }
  return undefined;
}

function bounds(checks: CheckDefinition[]): string {
  const parts = checks.flatMap((check) => {
    if (check.check === 'greater_than') return [`${check.inclusive ? '≥' : '>'} ${check.value}`];
    if (check.check === 'less_than') return [`${check.inclusive ? '≤' : '<'} ${check.value}`];
    return [];
  });
  return parts.length > 0 ? ` ${parts.join(', ')}` : '';
}

function lengths(checks: CheckDefinition[], unit: string): string {
  const minimum = checks.find((check) => check.check === 'min_length')?.minimum;
  const maximum = checks.find((check) => check.check === 'max_length')?.maximum;
  if (minimum === undefined && maximum === undefined) return '';
  if (minimum === 1 && maximum === undefined) return ' (non-empty)';
  if (minimum !== undefined && maximum !== undefined) return ` (${minimum}–${maximum} ${unit})`;
  return minimum !== undefined ? ` (at least ${minimum} ${unit})` : ` (at most ${maximum} ${unit})`;
}

/** A schema's type in words: `integer ≥ 1, ≤ 1000`, `"reverse" | "fixed"`, `list of strings`. */
export function describeType(schema: z.ZodType): string {
  const inner = unwrapSchema(schema);
  const found = definition(inner);
  const checks = (found.checks ?? []).map((check) => check._zod.def);
  switch (found.type) {
    case 'number': {
      const integer = checks.some((check) => check.format === 'safeint' || check.format === 'int');
      return `${integer ? 'integer' : 'number'}${bounds(checks)}`;
    }
    case 'string':
      return `string${lengths(checks, 'characters')}`;
    case 'boolean':
      return 'boolean';
    case 'enum':
      return Object.values(found.entries ?? {})
        .map((value) => JSON.stringify(value))
        .join(' | ');
    case 'literal':
      return (found.values ?? []).map((value) => JSON.stringify(value)).join(' | ');
    case 'array':
      return `list of ${plural(describeType(found.element!))}${lengths(checks, 'items')}`;
    case 'object':
      return 'object';
    case 'record':
      return `map of ${plural(describeType(found.valueType!))}`;
    case 'union':
      return [...new Set((found.options ?? []).map(describeType))].join(' or ');
    default:
      return found.type;
  }
}

function plural(type: string): string {
  if (/^(string|integer|number|boolean|object)\b/.test(type)) return type.replace(/^(\w+)/, '$1s');
  return type;
}

/** The `name` literal that tells a union member apart (`jsonl`), or null. */
function variantName(schema: z.ZodType): string | null {
  const shape = definition(unwrapSchema(schema)).shape;
  const name = shape?.name ? definition(unwrapSchema(shape.name)) : null;
  return name?.type === 'literal' && typeof name.values?.[0] === 'string' ? name.values[0] : null;
}

/** The members of a union whose every member is an object told apart by `name`. */
function variants(schema: z.ZodType): z.ZodType[] | null {
  const found = definition(unwrapSchema(schema));
  if (found.type !== 'union' || !found.options) return null;
  return found.options.every((option) => variantName(option) !== null) ? found.options : null;
}

interface Place {
  docsKey: string[];
  path: string;
  keys: string[];
  variant: string | null;
}

function entriesOf(schema: z.ZodType, place: Place, docs: ConfigDocs): ConfigEntry[] {
  const shape = definition(unwrapSchema(schema)).shape;
  if (!shape) return [];
  return Object.entries(shape).flatMap(([key, child]) => {
    const docsKey = [...place.docsKey, key];
    const path = place.path ? `${place.path}.${key}` : key;
    const keys = [...place.keys, key];
    const doc = docs[docsKey.join('.')];
    const value = schemaDefault(child);
    const inner = unwrapSchema(child);
    const element = definition(inner).type === 'array' ? definition(inner).element! : null;
    const nested = element && definition(unwrapSchema(element)).type === 'object' ? element : inner;
    const members = variants(child);
    const entry: ConfigEntry = {
      docsKey: docsKey.join('.'),
      path,
      keys,
      variant: place.variant,
      type: members ? 'object, by name' : describeType(child),
      default: value === undefined ? (doc?.default ?? null) : JSON.stringify(value),
      defaultInWords: value === undefined && doc?.default !== undefined,
      description: doc?.text ?? null,
      hasChildren: members !== null || definition(unwrapSchema(nested)).type === 'object',
    };
    if (members)
      return [
        entry,
        ...members.flatMap((member) => {
          const name = variantName(member)!;
          const variantPlace = {
            docsKey: [...place.docsKey, `${key}(${name})`],
            path,
            keys,
            variant: name,
          };
          return entriesOf(member, variantPlace, docs).filter(
            (found) => found.path !== `${path}.name`,
          );
        }),
      ];
    const childPath = element ? `${path}[]` : path;
    return [
      entry,
      ...entriesOf(nested, { docsKey, path: childPath, keys, variant: place.variant }, docs),
    ];
  });
}

/** Every key of a config schema, in the schema's order, documented from its source comments. */
export function configEntries(schema: z.ZodType, docs: ConfigDocs = {}): ConfigEntry[] {
  return entriesOf(schema, { docsKey: [], path: '', keys: [], variant: null }, docs);
}
