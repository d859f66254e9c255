import { closeSync, fsyncSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { openRegularFileSync, readBoundedFileSync } from '../../util/bounded-file.js';
import { FileFormatError, TeamtrError } from '../../util/errors.js';
import { describeLimit, formatBytes, limitOf } from '../../util/limits.js';
import { checkAllocation } from '../../util/memory-bound.js';
import type { AdamWState } from '../../optim/adamw.js';
import type { LoraSettings } from '../../tinker/types.js';
import { EngineUserError } from './local-losses.js';

/**
 * Saved weights of the local Tinker engine on disk (`teamtr serve --tinker --state-dir`): one
 * file per `tinker://` path,
 *
 *     u32 little-endian header length | header JSON | float32 data
 *
 * with the header { format, path, modelId, parameters: [lengths], optimizer: { step, moments:
 * [{ name, shape }] }, about } and the data the adapters' values then each moment's, in that
 * order. `about` (what the checkpoint listing and a restarted server need: its kind, times,
 * base model and LoRA settings) is absent from files of older versions.
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

/** What a saved checkpoint is, beside its numbers. */
export interface WeightsAbout {
  kind: 'weights' | 'sampler_weights';
  baseModel: string;
  lora: LoraSettings;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** null = kept until deleted. */
  expiresAt: number | null;
}

const aboutSchema = z.strictObject({
  kind: z.enum(['weights', 'sampler_weights']),
  baseModel: z.string(),
  lora: z.strictObject({
    rank: z.number().int().positive(),
    seed: z.number().int().optional(),
    trainUnembed: z.boolean().optional(),
    trainMlp: z.boolean().optional(),
    trainAttention: z.boolean().optional(),
  }),
  createdAt: z.number(),
  expiresAt: z.number().nullable(),
});

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
  about: aboutSchema.optional(),
});

export function writeWeightsFile(
  file: string,
  weightsPath: string,
  snapshot: WeightsSnapshot,
  about: WeightsAbout,
) {
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
      about,
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

type WeightsHeader = z.output<typeof headerSchema>;

function damagedError(file: string, weightsPath: string | null, why: string): EngineUserError {
  return new EngineUserError(
    `the saved weights${weightsPath ? ` of "${weightsPath}"` : ''} in ${file} are unreadable (${why}); the state directory is damaged — delete the file and save the weights again`,
  );
}

function parseHeader(bytes: Buffer, file: string, weightsPath: string | null): WeightsHeader {
  if (bytes.length < 4) throw damagedError(file, weightsPath, 'too short');
  const headerLength = bytes.readUInt32LE(0);
  if (4 + headerLength > bytes.length) throw damagedError(file, weightsPath, 'cut short');
  try {
    return headerSchema.parse(JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8')));
  } catch (error) {
    throw damagedError(file, weightsPath, `bad header: ${(error as Error).message.slice(0, 200)}`);
  }
}

const what = 'a saved weights file';

/**
 * Runs `read`, turning the bounded reader's and the memory bound's refusals (a FIFO, a device, a
 * file past its size, a header listing more than memory holds) into the damaged-state error a
 * client of the server gets.
 */
function refusedAsDamaged<T>(file: string, weightsPath: string | null, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof TeamtrError)) throw error;
    const prefix = error instanceof FileFormatError ? `${error.file}: ` : '';
    const why = error.message.startsWith(prefix)
      ? error.message.slice(prefix.length)
      : error.message;
    throw damagedError(file, weightsPath, why);
  }
}

/**
 * The header alone (path, model id, about): read at start to index a state directory. The file
 * is opened as a regular file (a FIFO or device is refused, never waited on) and its header
 * may not pass the JSON limit (TEAMTR_MAX_JSON_BYTES) nor the file.
 */
export function readWeightsHeader(
  file: string,
  weightsPath: string | null = null,
): WeightsHeader & { bytes: number; headerLength: number } {
  const { descriptor, size } = refusedAsDamaged(file, weightsPath, () =>
    openRegularFileSync(file, what),
  );
  try {
    const length = Buffer.alloc(4);
    if (readSync(descriptor, length, 0, 4, 0) < 4)
      throw damagedError(file, weightsPath, 'too short');
    const headerLength = length.readUInt32LE(0);
    if (4 + headerLength > size) throw damagedError(file, weightsPath, 'cut short');
    if (headerLength > limitOf('jsonBytes'))
      throw damagedError(
        file,
        weightsPath,
        `a header of ${formatBytes(headerLength)}, past ${describeLimit('jsonBytes')}`,
      );
    const bytes = Buffer.alloc(4 + headerLength);
    if (readSync(descriptor, bytes, 0, bytes.length, 0) < bytes.length)
      throw damagedError(file, weightsPath, 'cut short');
    return { ...parseHeader(bytes, file, weightsPath), bytes: size, headerLength };
  } finally {
    closeSync(descriptor);
  }
}

/**
 * The adapters and Adam state saved at `weightsPath`. The header is read first; the numbers it
 * lists set the file's exact size, which is checked against the memory bound and then caps the
 * bounded read: a file cut short, grown past its header, or swapped for a pipe is refused,
 * naming it, before its data is allocated.
 */
export function readWeightsFile(file: string, weightsPath: string): WeightsSnapshot {
  const damaged = (why: string) => damagedError(file, weightsPath, why);
  const listed = readWeightsHeader(file, weightsPath);
  const listedFloats = sum(arrayLengths(listed));
  const expectedBytes = 4 + listed.headerLength + 4 * listedFloats;
  const bytes = refusedAsDamaged(file, weightsPath, () => {
    checkAllocation({
      what: `the saved weights of "${weightsPath}" (${listedFloats.toLocaleString('en-US')} floats)`,
      bytes: expectedBytes + 4 * listedFloats,
      largestArrayElements: listedFloats,
      remedy: 'a header listing more numbers than this machine can hold',
    });
    return readBoundedFileSync(file, {
      what,
      limit: {
        bytes: expectedBytes,
        hint: `its header lists ${listedFloats.toLocaleString('en-US')} floats`,
      },
    });
  });
  // The file as read (it may have changed since its header was): its own header must account
  // for every byte.
  const header = parseHeader(bytes, file, weightsPath);
  if (header.path !== weightsPath) throw damaged(`it holds "${header.path}"`);
  const lengths = arrayLengths(header);
  const total = sum(lengths);
  const start = 4 + bytes.readUInt32LE(0);
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

/** Floats of each array a header lists: the adapters', then each moment's. */
function arrayLengths(header: WeightsHeader): number[] {
  const momentLengths = header.optimizer.moments.map(({ shape }) =>
    shape.reduce((product, size) => product * size, 1),
  );
  return [...header.parameters, ...momentLengths];
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
