import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { z } from 'zod';
import type { AdamWState } from '../optim/adamw.js';
import { EngineUserError } from './local-losses.js';

/**
 * Saved weights of the local Tinker engine on disk (`teamtr serve --tinker --state-dir`): one
 * file per `tinker://` path,
 *
 *     u32 little-endian header length | header JSON | float32 data
 *
 * with the header { format, path, modelId, parameters: [lengths], optimizer: { step, moments:
 * [{ name, shape }] } } and the data the adapters' values then each moment's, in that order.
 * Written to a temporary file, synced and renamed over the target: a crash leaves the old file
 * or the new one, never a torn one. Synchronous, like the engine's other work (one operation
 * at a time).
 */

/** One model's adapters and Adam state, as saved under a `tinker://` path. */
export interface WeightsSnapshot {
  modelId: string;
  parameters: Float32Array[];
  optimizer: AdamWState;
}

const headerSchema = z.strictObject({
  format: z.literal('teamtr-tinker-weights'),
  path: z.string(),
  modelId: z.string(),
  parameters: z.array(z.number().int().nonnegative()),
  optimizer: z.strictObject({
    step: z.number().int().nonnegative(),
    moments: z.array(
      z.strictObject({ name: z.string(), shape: z.array(z.number().int().nonnegative()) }),
    ),
  }),
});

export function writeWeightsFile(file: string, weightsPath: string, snapshot: WeightsSnapshot) {
  const header = Buffer.from(
    JSON.stringify({
      format: 'teamtr-tinker-weights',
      path: weightsPath,
      modelId: snapshot.modelId,
      parameters: snapshot.parameters.map((values) => values.length),
      optimizer: {
        step: snapshot.optimizer.step,
        moments: snapshot.optimizer.moments.map(({ name, shape }) => ({ name, shape })),
      },
    }),
  );
  const length = Buffer.alloc(4);
  length.writeUInt32LE(header.length);
  const arrays = [...snapshot.parameters, ...snapshot.optimizer.moments.map(({ data }) => data)];
  const temporary = `${file}.${process.pid}.tmp`;
  const descriptor = openSync(temporary, 'w');
  try {
    writeSync(descriptor, length);
    writeSync(descriptor, header);
    for (const values of arrays)
      writeSync(descriptor, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
  renameSync(temporary, file);
}

export function readWeightsFile(file: string, weightsPath: string): WeightsSnapshot {
  const bytes = readFileSync(file);
  const damaged = (why: string) =>
    new EngineUserError(
      `the saved weights of "${weightsPath}" in ${file} are unreadable (${why}); the state directory is damaged — delete the file and save the weights again`,
    );
  if (bytes.length < 4) throw damaged('too short');
  const headerLength = bytes.readUInt32LE(0);
  let header: z.output<typeof headerSchema>;
  try {
    header = headerSchema.parse(JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8')));
  } catch (error) {
    throw damaged(`bad header: ${(error as Error).message.slice(0, 200)}`);
  }
  if (header.path !== weightsPath) throw damaged(`it holds "${header.path}"`);
  const momentLengths = header.optimizer.moments.map(({ shape }) =>
    shape.reduce((product, size) => product * size, 1),
  );
  const lengths = [...header.parameters, ...momentLengths];
  const total = lengths.reduce((sum, value) => sum + value, 0);
  const start = 4 + headerLength;
  if (bytes.length !== start + 4 * total)
    throw damaged(`${bytes.length - start} data bytes where ${4 * total} were expected`);
  // Copy into an aligned buffer (the header length need not be a multiple of 4).
  const data = new Float32Array(total);
  new Uint8Array(data.buffer).set(bytes.subarray(start));
  let offset = 0;
  const arrays = lengths.map((length) => {
    const values = data.slice(offset, offset + length);
    offset += length;
    return values;
  });
  return {
    modelId: header.modelId,
    parameters: arrays.slice(0, header.parameters.length),
    optimizer: {
      step: header.optimizer.step,
      moments: header.optimizer.moments.map(({ name, shape }, index) => ({
        name,
        shape,
        data: arrays[header.parameters.length + index]!,
      })),
    },
  };
}
