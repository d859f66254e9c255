import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { writeJsonAtomic } from '../../../io/atomic.js';
import { readJsonFile } from '../../../io/json-file.js';
import { FileFormatError, TeamtrError } from '../../../util/errors.js';
import { parseWithSchema } from '../../../util/schema.js';
import type { TinkerUnit } from '../units.js';

/**
 * A Tinker-backed unit's part of a run checkpoint, `checkpoint/units/<name>/`:
 *
 *     tinker.json      { baseURL, baseModel, weightsPath }: where its weights and Adam state
 *                      were saved on the service (save_weights) when the checkpoint was taken
 *     tokenizer.json   its tokenizer
 *
 * Resume creates the unit's model on the service again and loads `weightsPath` into it, with
 * the optimizer state. The weights live on the service: a service that lost them (a local
 * `teamtr serve --tinker` without --state-dir that was restarted) cannot resume the run.
 */
export const tinkerCheckpointFile = 'tinker.json';

const tinkerCheckpointSchema = z.strictObject({
  format: z.literal('teamtr-tinker-unit'),
  baseURL: z.string(),
  baseModel: z.string(),
  weightsPath: z.string().min(1),
});

export async function saveTinkerUnitCheckpoint(
  directory: string,
  unit: TinkerUnit,
  tokenizer: unknown,
): Promise<void> {
  const weightsPath = await unit.agent.saveWeights('checkpoint');
  await writeJsonAtomic(path.join(directory, tinkerCheckpointFile), {
    format: 'teamtr-tinker-unit',
    baseURL: unit.agent.settings.baseURL,
    baseModel: unit.agent.settings.baseModel,
    weightsPath,
  });
  await writeJsonAtomic(path.join(directory, 'tokenizer.json'), tokenizer);
}

export async function restoreTinkerUnitCheckpoint(
  directory: string,
  unit: TinkerUnit,
): Promise<void> {
  const file = path.join(directory, tinkerCheckpointFile);
  if (!existsSync(file))
    throw new FileFormatError(
      directory,
      `no ${tinkerCheckpointFile}: agent "${unit.name}" was not trained on a Tinker service when this checkpoint was taken; resume with the run's own config.json`,
    );
  const saved = parseWithSchema(tinkerCheckpointSchema, await readJsonFile(file), file);
  if (saved.baseModel !== unit.agent.settings.baseModel)
    throw new TeamtrError(
      `the checkpoint of "${unit.name}" holds weights of base model "${saved.baseModel}", but engine.tinker.baseModel is now "${unit.agent.settings.baseModel}"; resume with the run's own config.json`,
    );
  try {
    await unit.agent.loadWeights(saved.weightsPath, { optimizer: true });
  } catch (error) {
    throw new TeamtrError(
      `resume: agent "${unit.name}" could not load its weights ${saved.weightsPath} from the Tinker service at ${unit.agent.settings.baseURL} (${(error as Error).message}); the service must still hold them (a local \`teamtr serve --tinker\` keeps saved weights across restarts only with --state-dir)`,
    );
  }
}
