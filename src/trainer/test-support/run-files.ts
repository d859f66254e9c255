import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadCheckpoint } from '../../io/checkpoint.js';
import type { MetricsRecord } from '../records.js';
import { hashDirectory } from '../run/checkpoint-integrity.js';
import { sealedStateText, type SealedRunState } from '../run/sealed-state.js';
import { train } from '../trainer.js';

/**
 * Every file under `directory` (relative path → bytes, base64; a symbolic link → its target;
 * a FIFO, socket or device → its kind, never opened), to prove a directory untouched.
 */
export function directorySnapshot(directory: string): Record<string, string> {
  const snapshot: Record<string, string> = {};
  const walk = (current: string): void => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const relative = path.relative(directory, full);
      if (entry.isDirectory()) walk(full);
      else if (entry.isSymbolicLink()) snapshot[relative] = `link to ${readlinkSync(full)}`;
      else if (!entry.isFile()) snapshot[relative] = 'not a regular file';
      else snapshot[relative] = readFileSync(full).toString('base64');
    }
  };
  walk(directory);
  return snapshot;
}

export function readRecords(runDirectory: string): MetricsRecord[] {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as MetricsRecord);
}

/** Metrics without wall-clock fields, which legitimately differ between runs. */
export function comparableRecords(runDirectory: string): unknown[] {
  return readRecords(runDirectory).map((record) => ({ ...record, elapsedSeconds: undefined }));
}

/**
 * A unit's saved weights (a LoRA unit: its adapter files and base-model reference), optimizer
 * moments and step, config and tokenizer, as plain values.
 */
export async function savedUnit(runDirectory: string, unit: string): Promise<unknown> {
  const directory = path.join(runDirectory, 'checkpoint', 'units', unit);
  const adapter = path.join(directory, 'adapter');
  const saved = await loadCheckpoint(directory, {
    parameters: existsSync(path.join(directory, 'model.safetensors')),
  });
  return {
    config: saved.config,
    tokenizer: saved.tokenizer,
    parameters: saved.parameters.map((entry) => [entry.name, Array.from(entry.data)]),
    adapter: existsSync(adapter) ? directorySnapshot(adapter) : null,
    extra: saved.extra,
    optimizer: saved.optimizer?.state.map((entry) => [entry.name, Array.from(entry.data)]),
    step: saved.optimizer?.scalars.step,
  };
}

/**
 * Records the checkpoint's files as they are now in its integrity record, sealed again: a
 * checkpoint changed this way verifies, as one a run wrote itself (a diverged run's, say) would.
 */
export async function resealCheckpoint(runDirectory: string): Promise<void> {
  const directory = path.join(runDirectory, 'checkpoint');
  const statePath = path.join(directory, 'state.json');
  const state = JSON.parse(readFileSync(statePath, 'utf8')) as SealedRunState;
  state.integrity.files = await hashDirectory(directory, (relative) => relative === 'state.json');
  writeFileSync(statePath, sealedStateText(state));
}

/**
 * A real run of `config` into `runDirectory`, stopped as Ctrl-C stops one once its first stage
 * is done: a checkpoint, a summary and every other file a run writes.
 */
export async function trainFirstStage(
  config: Parameters<typeof train>[0]['config'],
  runDirectory: string,
): Promise<void> {
  const controller = new AbortController();
  await train({
    config,
    runDirectory,
    signal: controller.signal,
    onProgress: (event) => {
      if (event.kind === 'stage') controller.abort();
    },
  });
}
