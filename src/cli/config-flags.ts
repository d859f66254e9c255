import path from 'node:path';
import { Option, type Command } from 'commander';
import YAML from 'yaml';
import { z } from 'zod';
import { readBoundedTextSync } from '../util/bounded-file.js';
import { ConfigError, FileFormatError } from '../util/errors.js';
import { parseStrictJson } from '../util/strict-json.js';

/**
 * Every leaf of a config schema becomes a flag: `rollout.groupSize` ↔ `--rollout-group-size`.
 * Flags override the config file; the merged object is then validated by the same schema,
 * so a flag and a file key obey exactly the same rules.
 */
interface Leaf {
  path: string[];
  flag: string;
  description: string;
}

function kebab(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function unwrapped(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let depth = 0; depth < 16; depth++) {
    const definition = current._zod.def as { innerType?: z.ZodType };
    if (!definition.innerType) break;
    current = definition.innerType;
  }
  return current;
}

/** Keys the program writes into a run's config, never a user: no flag. */
const recordedKeys = new Set(['taskFingerprint']);

function leavesOf(schema: z.ZodType, prefix: string[] = []): Leaf[] {
  const inner = unwrapped(schema);
  if (inner instanceof z.ZodObject && prefix.length < 3) {
    return Object.entries(inner.shape as Record<string, z.ZodType>)
      .filter(([key]) => !recordedKeys.has(key))
      .flatMap(([key, child]) => leavesOf(child, [...prefix, key]));
  }
  if (prefix.length === 0) return [];
  const choices = inner instanceof z.ZodEnum ? ` (${(inner.options as string[]).join(' | ')})` : '';
  const fallback = defaultOf(schema);
  return [
    {
      path: prefix,
      flag: prefix.map(kebab).join('-'),
      description: `config ${prefix.join('.')}${choices}${fallback === undefined ? '' : ` (default ${JSON.stringify(fallback)})`}`,
    },
  ];
}

/** The schema's default for a leaf, if it has a plain one (shown in --help). */
function defaultOf(schema: z.ZodType): unknown {
  let current = schema;
  for (let depth = 0; depth < 16; depth++) {
    const definition = current._zod.def as {
      type?: string;
      defaultValue?: unknown;
      innerType?: z.ZodType;
    };
    if (definition.type === 'default') {
      const value = definition.defaultValue;
      return typeof value === 'object' && value !== null ? undefined : value;
    }
    if (!definition.innerType) return undefined;
    current = definition.innerType;
  }
  return undefined;
}

/** Commander's key for a leaf's flag: `--rollout-group-size` → `rolloutGroupSize`. */
function optionKey(leaf: Leaf): string {
  return leaf.flag.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/** The config flags that were given (`--rollout-group-size`, ...), for commands that take none. */
export function configFlagsGiven(schema: z.ZodType, flags: Record<string, unknown>): string[] {
  return leavesOf(schema)
    .filter((leaf) => flags[optionKey(leaf)] !== undefined)
    .map((leaf) => `--${leaf.flag}`);
}

/** Adds one `--flag <value>` per schema leaf (except those in `skip`, e.g. objects set by file only). */
export function addConfigFlags(
  command: Command,
  schema: z.ZodType,
  skip: readonly string[] = [],
): void {
  for (const leaf of leavesOf(schema)) {
    if (skip.includes(leaf.path[0]!)) continue;
    command.addOption(new Option(`--${leaf.flag} <value>`, leaf.description));
  }
}

/** Parses a flag value: JSON when it parses (numbers, booleans, arrays), else the plain string. */
function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    if (/^[\d.,\s-]+$/.test(text) && text.includes(',')) return text.split(',').map(Number);
    return text;
  }
}

/** The config named by --config (if any) merged with the config flags that were given. */
export function configFromFlags(
  schema: z.ZodType,
  flags: Record<string, unknown>,
): Record<string, unknown> {
  return configFromFileAndFlags(schema, flags.config as string | undefined, flags);
}

/** The config file (YAML or JSON) merged with any config flags that were given. */
export function configFromFileAndFlags(
  schema: z.ZodType,
  configPath: string | undefined,
  flags: Record<string, unknown>,
): Record<string, unknown> {
  const config: Record<string, unknown> = configPath ? readConfigFile(configPath) : {};
  for (const leaf of leavesOf(schema)) {
    const value = flags[optionKey(leaf)];
    if (value === undefined) continue;
    let target = config;
    for (const part of leaf.path.slice(0, -1)) {
      const next = target[part];
      if (next === undefined) target[part] = {};
      else if (next === null || typeof next !== 'object')
        throw new ConfigError(
          leaf.path.join('.'),
          `--${leaf.flag} sets a key inside "${part}", which is not an object in ${configPath}`,
        );
      target = target[part] as Record<string, unknown>;
    }
    target[leaf.path[leaf.path.length - 1]!] = parseValue(String(value));
  }
  return config;
}

/**
 * A config is a page of settings (datasets go in their own file: task.path): read through the
 * bounded reader, so /dev/zero, a FIFO or a huge file is refused before it is parsed; a JSON
 * config that repeats a key is refused as YAML ones are.
 */
export function readConfigFile(configPath: string): Record<string, unknown> {
  const text = readBoundedTextSync(configPath, { limit: 'configBytes', what: 'a config file' });
  if (path.extname(configPath) === '.json')
    return configMapping(parseStrictJson(text, configPath), configPath);
  let value: unknown;
  try {
    value = YAML.parse(text);
  } catch (error) {
    throw new FileFormatError(
      configPath,
      `is not valid YAML: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  return configMapping(value, configPath);
}

function configMapping(value: unknown, configPath: string): Record<string, unknown> {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new FileFormatError(configPath, 'the config must be a mapping of keys to values');
  return value as Record<string, unknown>;
}
