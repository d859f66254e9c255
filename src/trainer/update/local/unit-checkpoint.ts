import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { checkpointFiles, loadCheckpoint, saveCheckpoint } from '../../../io/checkpoint.js';
import { restorePeftAdapterValues } from '../../../models/peft-restore.js';
import { savePeftAdapter } from '../../../models/peft.js';
import { assertFiniteParameters, assertForwardFinite } from '../../../models/weight-checks.js';
import { loraLayers } from '../../../nn/lora.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { FileFormatError, TeamtrError } from '../../../util/errors.js';
import { parseWithSchema } from '../../../util/schema.js';
import type { SaveUnitOptions } from '../engine.js';
import type { LocalUnit } from '../units.js';

/**
 * A local unit's part of a run checkpoint, `checkpoint/units/<name>/`, in the layout of
 * io/checkpoint.ts (config.json, optimizer.*, tokenizer.json) plus, for a unit that trains LoRA
 * adapters and nothing else:
 *
 *     adapter/               its adapters in PEFT's layout (adapter_config.json +
 *                            adapter_model.safetensors), loadable by PEFT, vLLM and teamtr
 *     extra.json             { lora: { baseModel, baseFingerprint } }: the base model's
 *                            directory and a SHA-256 of its frozen weights
 *
 * and no model.safetensors: the frozen base weights are those of the base model, which resume
 * loads again (refusing one whose weights changed). `baseWeights: true` saves them too
 * (model.safetensors, every parameter), making the checkpoint self-contained; resume then
 * restores from it. A unit without adapters saves and restores its full weights as before.
 */

export const adapterDirectoryName = 'adapter';

const loraReferenceSchema = z.looseObject({
  lora: z.strictObject({
    baseModel: z.string().nullable(),
    baseFingerprint: z.string(),
  }),
});

/**
 * True when the model trains LoRA adapters and nothing else, so its adapters and its base
 * model determine it.
 */
export function trainsOnlyAdapters(model: TransformerLM): boolean {
  const adapters = loraLayers(model);
  if (adapters.size === 0) return false;
  const adapterTensors = new Set(
    [...adapters.values()].flatMap((adapter) => [adapter.loraA, adapter.loraB]),
  );
  return model.trainableParameters().every(({ tensor }) => adapterTensors.has(tensor));
}

/**
 * SHA-256 over the name, shape and float32 bytes of every parameter that is not an adapter,
 * in model order: what a LoRA checkpoint needs its base model to be.
 */
export function baseWeightsFingerprint(model: TransformerLM): string {
  const adapterTensors = new Set(
    [...loraLayers(model).values()].flatMap((adapter) => [adapter.loraA, adapter.loraB]),
  );
  const hash = createHash('sha256');
  for (const { name, tensor } of model.namedParameters()) {
    if (adapterTensors.has(tensor)) continue;
    hash.update(`${name}[${tensor.shape.join(',')}]`);
    const data = tensor.data;
    hash.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return `sha256:${hash.digest('hex')}`;
}

/** Writes one unit's checkpoint directory (see the file comment for the layout). */
export async function saveUnitCheckpoint(
  directory: string,
  unit: LocalUnit,
  options: SaveUnitOptions,
): Promise<void> {
  const optimizer = unit.optimizer.stateDict();
  const adaptersOnly = trainsOnlyAdapters(unit.model);
  await saveCheckpoint(directory, {
    config: unit.model.config,
    parameters: !adaptersOnly || options.baseWeights ? unit.model.stateDict() : null,
    optimizer: { state: optimizer.moments, scalars: { step: optimizer.step } },
    tokenizer: options.tokenizer,
    ...(adaptersOnly
      ? {
          extra: {
            lora: {
              baseModel: unit.source ?? null,
              baseFingerprint: baseWeightsFingerprint(unit.model),
            },
          },
        }
      : {}),
  });
  if (adaptersOnly)
    await savePeftAdapter(unit.model, path.join(directory, adapterDirectoryName), {
      baseModel: unit.source,
    });
}

/**
 * Restores a unit saved by saveUnitCheckpoint onto the unit as buildTeam made it (base model
 * loaded, adapters attached, fresh optimizer): full weights when the checkpoint has them, else
 * the adapters, after checking that the base model is the one they were trained on. Weights
 * that are not finite, or overflow a forward pass, are refused naming the tensor.
 */
export async function restoreUnitCheckpoint(directory: string, unit: LocalUnit): Promise<void> {
  const hasWeights = existsSync(path.join(directory, checkpointFiles.model));
  const saved = await loadCheckpoint(directory, { parameters: hasWeights });
  if (hasWeights) unit.model.loadStateDict(saved.parameters);
  else {
    if (!existsSync(path.join(directory, adapterDirectoryName)))
      throw new FileFormatError(
        directory,
        `neither ${checkpointFiles.model} nor ${adapterDirectoryName}/ is present: the checkpoint of unit "${unit.name}" is incomplete`,
      );
    checkBaseModel(directory, unit, saved.extra);
    await restorePeftAdapterValues(unit.model, path.join(directory, adapterDirectoryName));
  }
  if (saved.optimizer)
    unit.optimizer.loadStateDict({
      step: Number(saved.optimizer.scalars.step ?? 0),
      moments: saved.optimizer.state,
    });
  // The weights a run saved are read as any model's are: none NaN, none that overflow.
  assertFiniteParameters(unit.model, directory);
  assertForwardFinite(unit.model, directory);
}

function checkBaseModel(directory: string, unit: LocalUnit, extra: unknown): void {
  if (!trainsOnlyAdapters(unit.model))
    throw new TeamtrError(
      `${directory} holds LoRA adapters of "${unit.name}", but its config now trains the whole model; resume with the run's own config.json`,
    );
  const { lora } = parseWithSchema(
    loraReferenceSchema,
    extra ?? {},
    path.join(directory, checkpointFiles.extra),
  );
  const fingerprint = baseWeightsFingerprint(unit.model);
  if (fingerprint !== lora.baseFingerprint)
    throw new TeamtrError(
      `the adapters of "${unit.name}" in ${directory} were trained on the base model at ${lora.baseModel ?? '(unknown)'} with weights ${lora.baseFingerprint.slice(0, 19)}…, but the base model loaded now (${unit.source ?? 'unknown'}) has weights ${fingerprint.slice(0, 19)}…; restore the original base model there, or start a new run`,
    );
}
