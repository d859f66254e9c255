import os from 'node:os';
import { ConfigError } from './errors.js';

/**
 * Every bound teamtr puts on what it reads (files, model directories, tokenizers, chat
 * templates, task code), in one table: its default, the environment variable that changes it,
 * and what it guards. Errors quote the variable, so a user who needs more knows how to get it;
 * docs/guides/limits.md lists the same table (a test keeps the two in step).
 */
export interface InputLimit {
  /** The environment variable that overrides the default (a positive number). */
  readonly variable: string;
  readonly defaultValue: number;
  readonly unit: 'bytes' | 'characters' | 'steps' | 'milliseconds' | 'fraction' | 'MiB';
  /** What it bounds, for the docs. */
  readonly bounds: string;
}

const mebibyte = 2 ** 20;

export const inputLimits = {
  configBytes: {
    variable: 'TEAMTR_MAX_CONFIG_BYTES',
    defaultValue: mebibyte,
    unit: 'bytes',
    bounds: 'a training config file (-c, YAML or JSON)',
  },
  jsonBytes: {
    variable: 'TEAMTR_MAX_JSON_BYTES',
    defaultValue: 64 * mebibyte,
    unit: 'bytes',
    bounds:
      'a JSON file of a model directory or checkpoint (config.json, tokenizer_config.json, extra.json, …)',
  },
  tokenizerBytes: {
    variable: 'TEAMTR_MAX_TOKENIZER_BYTES',
    defaultValue: 512 * mebibyte,
    unit: 'bytes',
    bounds: 'tokenizer.json',
  },
  chatTemplateBytes: {
    variable: 'TEAMTR_MAX_CHAT_TEMPLATE_BYTES',
    defaultValue: mebibyte,
    unit: 'bytes',
    bounds: 'chat_template.jinja',
  },
  datasetBytes: {
    variable: 'TEAMTR_MAX_DATASET_BYTES',
    defaultValue: 4096 * mebibyte,
    unit: 'bytes',
    bounds: 'a JSONL or Parquet dataset (task.path), or a task module (--task-module)',
  },
  datasetLineBytes: {
    variable: 'TEAMTR_MAX_DATASET_LINE_BYTES',
    defaultValue: mebibyte,
    unit: 'bytes',
    bounds: 'one line of a JSONL dataset (one problem: prompt, answer and metadata)',
  },
  metricsBytes: {
    variable: 'TEAMTR_MAX_METRICS_BYTES',
    defaultValue: 256 * mebibyte,
    unit: 'bytes',
    bounds:
      "a run's metrics.jsonl, transcripts.jsonl or TensorBoard event file, each read whole (a run's summary, resume)",
  },
  memoryShare: {
    variable: 'TEAMTR_MEMORY_SHARE',
    defaultValue: 0.6,
    unit: 'fraction',
    bounds:
      "the share of this machine's memory one allocation sized by input may take (a model's float32 weights, a tensor, a planner's table)",
  },
  samplingMemoryMiB: {
    variable: 'TEAMTR_SAMPLING_MEMORY_MIB',
    defaultValue: 1_024,
    unit: 'MiB',
    bounds:
      'the working memory of sampling (key/value caches and activations): a larger batch is sampled in chunks of rows that fit, with the same tokens',
  },
  templateSteps: {
    variable: 'TEAMTR_MAX_TEMPLATE_STEPS',
    defaultValue: 100_000,
    unit: 'steps',
    bounds:
      'one rendering of a chat template (each evaluated expression or statement is a step; range() may not yield more items)',
  },
  templateOutputCharacters: {
    variable: 'TEAMTR_MAX_TEMPLATE_OUTPUT',
    defaultValue: 16 * mebibyte,
    unit: 'characters',
    bounds: 'any string a chat template builds while rendering',
  },
  regexProbeMilliseconds: {
    variable: 'TEAMTR_REGEX_PROBE_MS',
    defaultValue: 2_000,
    unit: 'milliseconds',
    bounds:
      "the check, at load, that a tokenizer's regular expressions (Split, Replace) do not backtrack catastrophically",
  },
  taskLoadMilliseconds: {
    variable: 'TEAMTR_TASK_LOAD_MS',
    defaultValue: 60_000,
    unit: 'milliseconds',
    bounds: 'loading a --task-module (its top level, module-level awaits included)',
  },
  taskCallMilliseconds: {
    variable: 'TEAMTR_TASK_CALL_MS',
    defaultValue: 60_000,
    unit: 'milliseconds',
    bounds:
      "one call into task code: a --task-module's reward or split, or an async reward of a task defined in code",
  },
  taskMemoryMiB: {
    variable: 'TEAMTR_TASK_MEMORY_MIB',
    defaultValue: 4_096,
    unit: 'MiB',
    bounds: "the JavaScript heap of a --task-module's worker",
  },
  taskResultCharacters: {
    variable: 'TEAMTR_MAX_TASK_RESULT',
    defaultValue: mebibyte,
    unit: 'characters',
    bounds: 'what one reward call of a --task-module returns (the reward and its details), as JSON',
  },
} as const satisfies Record<string, InputLimit>;

export type InputLimitName = keyof typeof inputLimits;

/** The limit in force: the environment variable when set (validated), else the default. */
export function limitOf(name: InputLimitName): number {
  const limit: InputLimit = inputLimits[name];
  const text = process.env[limit.variable];
  if (text === undefined || text.trim() === '') return limit.defaultValue;
  const value = Number(text);
  const valid =
    Number.isFinite(value) &&
    value > 0 &&
    (limit.unit === 'fraction' ? value <= 1 : Number.isSafeInteger(value));
  if (!valid)
    throw new ConfigError(
      limit.variable,
      `${JSON.stringify(text)} is not a valid limit: give ${limit.unit === 'fraction' ? 'a number in (0, 1]' : `a positive whole number of ${limit.unit}`} (default ${limit.defaultValue})`,
    );
  return value;
}

/** "1 MiB (TEAMTR_MAX_CONFIG_BYTES raises it)": the figure in force and how to change it. */
export function describeLimit(name: InputLimitName): string {
  const limit: InputLimit = inputLimits[name];
  return `${formatAmount(limitOf(name), limit.unit)} (${limit.variable} raises it)`;
}

export function formatAmount(value: number, unit: InputLimit['unit']): string {
  if (unit === 'bytes') return formatBytes(value);
  if (unit === 'fraction') return `${Math.round(value * 100)}%`;
  if (unit === 'milliseconds')
    return value % 1000 === 0 ? `${value / 1000} s` : `${value.toLocaleString('en-US')} ms`;
  return `${value.toLocaleString('en-US')} ${unit}`;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${trim(bytes / 2 ** 30)} GiB`;
  if (bytes >= mebibyte) return `${trim(bytes / mebibyte)} MiB`;
  if (bytes >= 1024) return `${trim(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}

function trim(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** The bytes one allocation sized by input may take: a share of this machine's memory. */
export function memoryBoundBytes(): number {
  return os.totalmem() * limitOf('memoryShare');
}
