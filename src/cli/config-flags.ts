import path from 'node:path';
import { Option, type Command } from 'commander';
import YAML from 'yaml';
import { z } from 'zod';
import { readBoundedTextSync } from '../util/bounded-file.js';
import { ConfigError, FileFormatError } from '../util/errors.js';
import { parseStrictJson } from '../util/strict-json.js';
import {
  configEntries,
  unwrapSchema,
  type ConfigDocs,
  type ConfigEntry,
} from './reference/config-entries.js';

/**
 * Every leaf of a config schema becomes a flag: `rollout.groupSize` ↔ `--rollout-group-size`.
 * Flags override the config file; the merged object is then validated by the same schema,
 * so a flag and a file key obey exactly the same rules.
 */
interface Leaf {
  path: string[];
  flag: string;
  /** What `--help` says: the key, its meaning and its default. */
  description: string;
}

function kebab(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

/** Keys the program writes into a run's config, never a user: no flag. */
const recordedKeys = new Set(['taskFingerprint']);

/** How deep flags reach: `--trust-region-adaptive-delta-growth`; deeper objects take JSON. */
const flagDepth = 3;

/** The value at `path` in a config object (the demo's file), if any. */
function valueAt(config: Record<string, unknown> | undefined, path: readonly string[]): unknown {
  let current: unknown = config;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * `--help`'s text for a key: `rollout.groupSize: Trajectories per prompt: … (default 8)`, the
 * choices of an enum, and the default the command really uses (`shown`, e.g. the demo's file).
 */
function describeLeaf(
  path: readonly string[],
  entry: ConfigEntry | undefined,
  shown: { config?: Record<string, unknown>; source?: string },
): string {
  const override = valueAt(shown.config, path);
  const fallback =
    override !== undefined
      ? `default ${JSON.stringify(override)}${shown.source ? `, from ${shown.source}` : ''}`
      : entry?.default
        ? `default ${entry.default}`
        : null;
  const choices = entry && entry.type.includes('" | "') ? entry.type : null;
  const details = [choices, fallback].filter((part) => part !== null).join('; ');
  const meaning = entry?.description ? `: ${entry.description}` : '';
  return `${path.join('.')}${meaning}${details ? ` (${details})` : ''}`;
}

function leavesOf(
  schema: z.ZodType,
  describe: (path: string[]) => string,
  prefix: string[] = [],
): Leaf[] {
  const inner = unwrapSchema(schema);
  if (inner instanceof z.ZodObject && prefix.length < flagDepth) {
    return Object.entries(inner.shape as Record<string, z.ZodType>)
      .filter(([key]) => !recordedKeys.has(key))
      .flatMap(([key, child]) => leavesOf(child, describe, [...prefix, key]));
  }
  if (prefix.length === 0) return [];
  return [{ path: prefix, flag: prefix.map(kebab).join('-'), description: describe(prefix) }];
}

/** The schema's flags with their `--help` text (`docs`: the schema's doc comments). */
function flagLeaves(
  schema: z.ZodType,
  docs: ConfigDocs = {},
  shown: { config?: Record<string, unknown>; source?: string } = {},
): Leaf[] {
  const entries = new Map(
    configEntries(schema, docs)
      .filter((entry) => entry.variant === null && !entry.path.includes('[]'))
      .map((entry) => [entry.keys.join('.'), entry]),
  );
  return leavesOf(schema, (path) => describeLeaf(path, entries.get(path.join('.')), shown));
}

/** Commander's key for a leaf's flag: `--rollout-group-size` → `rolloutGroupSize`. */
function optionKey(leaf: Leaf): string {
  return leaf.flag.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/** The config flags that were given (`--rollout-group-size`, ...), for commands that take none. */
export function configFlagsGiven(schema: z.ZodType, flags: Record<string, unknown>): string[] {
  return flagLeaves(schema)
    .filter((leaf) => flags[optionKey(leaf)] !== undefined)
    .map((leaf) => `--${leaf.flag}`);
}

/**
 * The options addConfigFlags made for a schema docs/reference/config.md documents: the CLI
 * reference sums them up instead of listing them.
 */
const referencedOptions = new WeakSet<Option>();

export function isConfigOption(option: Option): boolean {
  return referencedOptions.has(option);
}

/**
 * Adds one `--flag <value>` per schema leaf (except those under `skip`, e.g. keys a command
 * sets itself). `docs` are the schema's doc comments (`--help` shows each key's meaning);
 * `shown` is a config whose values are the command's real defaults (the demo's file).
 */
export function addConfigFlags(
  command: Command,
  schema: z.ZodType,
  options: {
    skip?: readonly string[];
    docs?: ConfigDocs;
    shown?: { config: Record<string, unknown>; source: string };
    /** The schema is the one docs/reference/config.md documents (the run config). */
    inReference?: boolean;
  } = {},
): void {
  for (const leaf of flagLeaves(schema, options.docs, options.shown)) {
    if (options.skip?.includes(leaf.path[0]!)) continue;
    const option = new Option(`--${leaf.flag} <value>`, leaf.description);
    if (options.inReference) referencedOptions.add(option);
    command.addOption(option);
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
  for (const leaf of flagLeaves(schema)) {
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
