import { stat } from 'node:fs/promises';
import path from 'node:path';
import { resolveModelConfig, type ModelConfig, type ModelConfigInput } from '../nn/config.js';
import { FileFormatError, NonFiniteWeightsError } from '../util/errors.js';
import { firstNonFiniteValue } from '../util/finite.js';
import { recoverInterruptedReplace, replaceDirectoryAtomic, writeJsonAtomic } from './atomic.js';
import {
  assertJsonRoundTrips,
  readJsonFile,
  readJsonObjectFile,
  type JsonObject,
} from './json-file.js';
import type { NamedArray } from '../util/named-array.js';
import { readSafetensors, writeSafetensors, type SafetensorsContents } from './safetensors.js';

/**
 * A checkpoint is a directory, written whole or not at all (replaceDirectoryAtomic):
 *
 * - `config.json`: the resolved model config (every default filled in), so a checkpoint always
 *   says exactly what it is; validated against `modelConfigSchema` when loaded.
 * - `model.safetensors`: the weights by parameter name (absent when they live elsewhere).
 * - `optimizer.safetensors` + `optimizer.json`: optimizer tensors and scalars (step count,
 *   hyper-parameters), when the caller saves an optimizer.
 * - `extra.json`: caller state, e.g. random generator state and the training step.
 * - `tokenizer.json`: the tokenizer's `toJSON()`, when given.
 */

export const checkpointFiles = {
  config: 'config.json',
  model: 'model.safetensors',
  optimizerTensors: 'optimizer.safetensors',
  optimizerScalars: 'optimizer.json',
  extra: 'extra.json',
  tokenizer: 'tokenizer.json',
} as const;

export interface CheckpointOptimizer {
  /** Per-parameter tensors, e.g. `exp_avg.layers.0.weight`. */
  state: NamedArray[];
  /** Plain JSON: step count, hyper-parameters. */
  scalars: JsonObject;
}

export interface Checkpoint {
  config: ModelConfig;
  parameters: NamedArray[];
  optimizer?: CheckpointOptimizer;
  /** Caller state as plain JSON (random generator state, step). */
  extra?: JsonObject;
  /** A tokenizer's `toJSON()`; the tokenizer layer turns it back into a tokenizer. */
  tokenizer?: unknown;
}

/** What `saveCheckpoint` takes: the config may omit defaults; it is saved resolved. */
export type CheckpointInput = Omit<Checkpoint, 'config' | 'parameters'> & {
  config: ModelConfigInput | ModelConfig;
  /** null: no `model.safetensors`, the weights live elsewhere (a LoRA unit's base model). */
  parameters: NamedArray[] | null;
};

export interface LoadCheckpointOptions {
  /** Load the optimizer's tensors and scalars if present (skip them for inference). @default true */
  optimizer?: boolean;
  /**
   * Load `model.safetensors` (false for a checkpoint saved without weights; `parameters` is
   * then empty). @default true
   */
  parameters?: boolean;
}

/**
 * Saves a checkpoint to `directory` atomically: a crash leaves the previous one intact. Weights
 * or optimizer moments holding NaN or ±Inf (a diverged run) are refused, naming the tensor,
 * before anything is written: a checkpoint is never a diverged model.
 */
export async function saveCheckpoint(
  directory: string,
  checkpoint: CheckpointInput,
): Promise<void> {
  refuseNonFinite(directory, checkpoint);
  const config = resolveModelConfig(checkpoint.config, 'checkpoint config');
  if (checkpoint.optimizer) assertJsonRoundTrips(checkpoint.optimizer.scalars, 'optimizer scalars');
  if (checkpoint.extra !== undefined) assertJsonRoundTrips(checkpoint.extra, 'checkpoint extra');
  if (checkpoint.tokenizer !== undefined)
    assertJsonRoundTrips(checkpoint.tokenizer, 'tokenizer JSON');
  await replaceDirectoryAtomic(directory, async (temp) => {
    await writeJsonAtomic(path.join(temp, checkpointFiles.config), config);
    if (checkpoint.parameters)
      await writeSafetensors(path.join(temp, checkpointFiles.model), checkpoint.parameters);
    if (checkpoint.optimizer) {
      const { state, scalars } = checkpoint.optimizer;
      await writeSafetensors(path.join(temp, checkpointFiles.optimizerTensors), state);
      await writeJsonAtomic(path.join(temp, checkpointFiles.optimizerScalars), scalars);
    }
    if (checkpoint.extra !== undefined) {
      await writeJsonAtomic(path.join(temp, checkpointFiles.extra), checkpoint.extra);
    }
    if (checkpoint.tokenizer !== undefined) {
      await writeJsonAtomic(path.join(temp, checkpointFiles.tokenizer), checkpoint.tokenizer);
    }
  });
}

function refuseNonFinite(directory: string, checkpoint: CheckpointInput): void {
  for (const [what, arrays] of [
    ['weight', checkpoint.parameters ?? []],
    ['optimizer tensor', checkpoint.optimizer?.state ?? []],
  ] as const) {
    const found = firstNonFiniteValue(arrays);
    if (found)
      throw new NonFiniteWeightsError(
        directory,
        found,
        `refusing to save a checkpoint to ${directory}: ${what} "${found.name}" is ${found.value} at element ${found.index}, so the model diverged; whatever was saved there before is intact`,
      );
  }
}

/**
 * Loads a checkpoint directory. Missing files, bad JSON and a config that fails the schema are
 * errors naming the file; check the tensors against the model with `expectShapes`.
 */
export async function loadCheckpoint(
  directory: string,
  options: LoadCheckpointOptions = {},
): Promise<Checkpoint> {
  const config = await loadCheckpointConfig(directory);
  const file = (name: string) => path.join(directory, name);
  const checkpoint: Checkpoint = {
    config,
    parameters:
      (options.parameters ?? true)
        ? namedArrays(await readSafetensors(file(checkpointFiles.model)))
        : [],
  };
  if (options.optimizer ?? true) {
    const optimizer = await loadOptimizer(directory);
    if (optimizer) checkpoint.optimizer = optimizer;
  }
  if (await exists(file(checkpointFiles.extra))) {
    checkpoint.extra = await readJsonObjectFile(file(checkpointFiles.extra));
  }
  if (await exists(file(checkpointFiles.tokenizer))) {
    checkpoint.tokenizer = await readJsonFile(file(checkpointFiles.tokenizer), 'tokenizerBytes');
  }
  return checkpoint;
}

/** Reads and validates only `config.json` of a checkpoint. */
export async function loadCheckpointConfig(directory: string): Promise<ModelConfig> {
  await recoverInterruptedReplace(directory);
  const info = await stat(directory).catch(() => null);
  if (!info) throw new FileFormatError(directory, 'checkpoint directory not found');
  if (!info.isDirectory()) throw new FileFormatError(directory, 'is not a checkpoint directory');
  const configPath = path.join(directory, checkpointFiles.config);
  return resolveModelConfig(await readJsonFile(configPath), configPath);
}

async function loadOptimizer(directory: string): Promise<CheckpointOptimizer | undefined> {
  const tensorsPath = path.join(directory, checkpointFiles.optimizerTensors);
  const scalarsPath = path.join(directory, checkpointFiles.optimizerScalars);
  const [hasTensors, hasScalars] = [await exists(tensorsPath), await exists(scalarsPath)];
  if (!hasTensors && !hasScalars) return undefined;
  if (hasTensors !== hasScalars) {
    const [present, absent] = hasTensors ? [tensorsPath, scalarsPath] : [scalarsPath, tensorsPath];
    throw new FileFormatError(
      absent,
      `file not found, though ${path.basename(present)} is present; the checkpoint is incomplete`,
    );
  }
  return {
    state: namedArrays(await readSafetensors(tensorsPath)),
    scalars: await readJsonObjectFile(scalarsPath),
  };
}

function namedArrays(contents: SafetensorsContents): NamedArray[] {
  return [...contents.tensors].map(([name, tensor]) => ({
    name,
    shape: tensor.shape,
    data: tensor.data,
  }));
}

async function exists(filePath: string): Promise<boolean> {
  return (await stat(filePath).catch(() => null)) !== null;
}
