import type { FileHandle } from 'node:fs/promises';
import { openRegularFile } from '../util/bounded-file.js';
import { FileFormatError, ShapeError, TeamtrError } from '../util/errors.js';
import { checkAllocation } from '../util/memory-bound.js';
import { writeFileAtomic } from './atomic.js';
import { decodeFloats, float32Bytes } from './float-conversion.js';
import { formatShape, shapeElementCount, type NamedArray } from '../util/named-array.js';
import {
  dtypeByteSize,
  isReadableDtype,
  parseHeader,
  parseHeaderLength,
  readableDtypes,
  type ReadableDtype,
  type SafetensorsDtype,
  type SafetensorsEntry,
  type SafetensorsHeader,
} from './safetensors-header.js';

/**
 * Reading and writing safetensors files (the Hugging Face weight format) as float32 arrays.
 * Reads take only the requested tensors from disk with positional reads; F16, BF16 and F64
 * convert to float32. Writes are F32, tensors sorted by name, header space-padded so the data
 * region starts 8-byte aligned, and atomic. Header validation lives in safetensors-header.ts.
 */

export interface SafetensorsTensor {
  /** The dtype stored in the file; `data` is always float32. */
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsContents {
  /** In header order. */
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
}

export interface ReadSafetensorsOptions {
  /** Read only these tensors (an unknown name is an error). @default every tensor in the file */
  names?: readonly string[];
}

/** Reads a file in pieces of this size, so half-precision shards need little scratch memory. */
const readChunkBytes = 16 * 1024 * 1024;

/** Reads and validates only the header of a safetensors file. */
export async function readSafetensorsHeader(filePath: string): Promise<SafetensorsHeader> {
  return withFile(filePath, async (handle, fileByteLength) =>
    readHeader(handle, fileByteLength, filePath),
  );
}

/** Reads tensors (all, or `options.names`) and the metadata of a safetensors file. */
export async function readSafetensors(
  filePath: string,
  options: ReadSafetensorsOptions = {},
): Promise<SafetensorsContents> {
  return withFile(filePath, async (handle, fileByteLength) => {
    const header = await readHeader(handle, fileByteLength, filePath);
    const selected = selectEntries(header, options.names, filePath);
    checkTensorsFit(selected, filePath);
    const tensors = new Map<string, SafetensorsTensor>();
    for (const [name, entry] of selected) {
      const data = allocateTensor(entry, name, filePath);
      await readTensorInto(handle, header.dataStart + entry.begin, name, entry, data, filePath);
      tensors.set(name, { dtype: entry.dtype, shape: entry.shape, data });
    }
    return { tensors, metadata: header.metadata };
  });
}

/** Decodes a whole safetensors file held in memory (same validation as reading from disk). */
export function decodeSafetensors(
  bytes: Uint8Array,
  options: ReadSafetensorsOptions & { source?: string } = {},
): SafetensorsContents {
  const source = options.source ?? '<safetensors buffer>';
  const headerLength = parseHeaderLength(bytes.subarray(0, 8), bytes.length, source);
  const header = parseHeader(
    bytes.subarray(8, 8 + headerLength),
    bytes.length - 8 - headerLength,
    source,
  );
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, entry] of selectEntries(header, options.names, source)) {
    const data = allocateTensor(entry, name, source);
    const start = header.dataStart + entry.begin;
    const dtype = readableDtypeOf(entry, name, source);
    decodeFloats(bytes.subarray(start, start + entry.end - entry.begin), dtype, data, 0);
    tensors.set(name, { dtype: entry.dtype, shape: entry.shape, data });
  }
  return { tensors, metadata: header.metadata };
}

/** Writes float32 tensors to `filePath` atomically. */
export async function writeSafetensors(
  filePath: string,
  tensors: readonly NamedArray[],
  metadata?: Record<string, string>,
): Promise<void> {
  await writeFileAtomic(filePath, safetensorsChunks(tensors, metadata));
}

/** The bytes `writeSafetensors` would write. */
export function encodeSafetensors(
  tensors: readonly NamedArray[],
  metadata?: Record<string, string>,
): Buffer {
  return Buffer.concat(safetensorsChunks(tensors, metadata));
}

/** Prefix, header and each tensor's bytes (views, not copies), in file order. */
function safetensorsChunks(
  tensors: readonly NamedArray[],
  metadata: Record<string, string> | undefined,
): Uint8Array[] {
  const sorted = validateForWriting(tensors, metadata);
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const tensor of sorted) {
    const end = offset + tensor.data.byteLength;
    header[tensor.name] = { dtype: 'F32', shape: tensor.shape, data_offsets: [offset, end] };
    offset = end;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  // Pad with spaces so the data region starts at a multiple of 8, as the reference writer does.
  const padding = (8 - (json.length % 8)) % 8;
  const headerBytes = Buffer.concat([json, Buffer.alloc(padding, 0x20)]);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(headerBytes.length));
  return [prefix, headerBytes, ...sorted.map((tensor) => float32Bytes(tensor.data))];
}

function validateForWriting(
  tensors: readonly NamedArray[],
  metadata: Record<string, string> | undefined,
): NamedArray[] {
  const seen = new Set<string>();
  for (const tensor of tensors) {
    if (tensor.name === '__metadata__') {
      throw new TeamtrError('"__metadata__" is reserved in safetensors and cannot name a tensor');
    }
    if (seen.has(tensor.name)) throw new TeamtrError(`duplicate tensor name "${tensor.name}"`);
    seen.add(tensor.name);
    if (!(tensor.data instanceof Float32Array)) {
      throw new ShapeError(`tensor "${tensor.name}": data must be a Float32Array`);
    }
    const validShape = tensor.shape.every((size) => Number.isSafeInteger(size) && size >= 0);
    const count = validShape ? shapeElementCount(tensor.shape) : null;
    if (count !== tensor.data.length) {
      throw new ShapeError(
        `tensor "${tensor.name}": shape ${formatShape(tensor.shape)} does not match its ${tensor.data.length} elements`,
      );
    }
  }
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (typeof value !== 'string') {
      throw new TeamtrError(`safetensors metadata "${key}" must be a string, got ${typeof value}`);
    }
  }
  return [...tensors].sort((left, right) =>
    left.name < right.name ? -1 : left.name > right.name ? 1 : 0,
  );
}

async function withFile<Result>(
  filePath: string,
  body: (handle: FileHandle, fileByteLength: number) => Promise<Result>,
): Promise<Result> {
  // A regular file only (a FIFO or device is refused, never waited on); its size from fstat.
  const { handle, size } = await openRegularFile(filePath, 'a safetensors file');
  try {
    return await body(handle, size);
  } finally {
    await handle.close();
  }
}

async function readHeader(
  handle: FileHandle,
  fileByteLength: number,
  source: string,
): Promise<SafetensorsHeader> {
  const prefix = new Uint8Array(8);
  if (fileByteLength >= 8) await readExactly(handle, prefix, 0, source);
  const headerLength = parseHeaderLength(prefix, fileByteLength, source);
  const headerBytes = new Uint8Array(headerLength);
  await readExactly(handle, headerBytes, 8, source);
  return parseHeader(headerBytes, fileByteLength - 8 - headerLength, source);
}

function selectEntries(
  header: SafetensorsHeader,
  names: readonly string[] | undefined,
  source: string,
): Array<[string, SafetensorsEntry]> {
  const selected: Array<[string, SafetensorsEntry]> = names
    ? names.map((name) => {
        const entry = header.tensors.get(name);
        if (!entry) throw new FileFormatError(source, missingTensorMessage(name, header));
        return [name, entry];
      })
    : [...header.tensors];
  // Refuse unsupported dtypes before reading (and allocating) anything.
  for (const [name, entry] of selected) readableDtypeOf(entry, name, source);
  return selected;
}

function missingTensorMessage(name: string, header: SafetensorsHeader): string {
  const available = [...header.tensors.keys()];
  const listed = available
    .slice(0, 20)
    .map((item) => `"${item}"`)
    .join(', ');
  const more = available.length > 20 ? `, ... (${available.length} in all)` : '';
  return `no tensor named "${name}" (available: ${listed || 'none'}${more})`;
}

function readableDtypeOf(entry: SafetensorsEntry, name: string, source: string): ReadableDtype {
  if (isReadableDtype(entry.dtype)) return entry.dtype;
  throw new FileFormatError(
    source,
    `tensor "${name}" has unsupported dtype ${entry.dtype} (supported: ${readableDtypes.join(', ')})`,
  );
}

/**
 * The header was checked against the file size, but a sparse file claims any size without
 * using the disk: the float32 arrays of every tensor to be read must fit the memory bound
 * before the first is allocated.
 */
function checkTensorsFit(selected: Array<[string, SafetensorsEntry]>, source: string): void {
  let elements = 0;
  let largest: [string, SafetensorsEntry] | null = null;
  for (const entry of selected) {
    const count = shapeElementCount(entry[1].shape) ?? 0;
    elements += count;
    if (largest === null || count > (shapeElementCount(largest[1].shape) ?? 0)) largest = entry;
  }
  if (largest === null) return;
  checkAllocation({
    what: `its ${selected.length} tensors (the largest "${largest[0]}" ${formatShape(largest[1].shape)})`,
    bytes: elements * 4,
    largestArrayElements: shapeElementCount(largest[1].shape) ?? 0,
    source,
    remedy: 'these weights are too large for this machine, or the file is damaged',
  });
}

/** Bounded by the file's size (parseHeader) and by the memory bound (checkTensorsFit). */
function allocateTensor(entry: SafetensorsEntry, name: string, source: string): Float32Array {
  const count = shapeElementCount(entry.shape) ?? 0;
  try {
    return new Float32Array(count);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new FileFormatError(
      source,
      `tensor "${name}" with shape ${formatShape(entry.shape)} is too large to hold in one float32 array`,
    );
  }
}

/** Positional reads in chunks: F32 straight into `data`, other dtypes through a scratch buffer. */
async function readTensorInto(
  handle: FileHandle,
  position: number,
  name: string,
  entry: SafetensorsEntry,
  data: Float32Array,
  source: string,
): Promise<void> {
  const dtype = readableDtypeOf(entry, name, source);
  const byteLength = entry.end - entry.begin;
  if (dtype === 'F32') {
    await readExactly(
      handle,
      new Uint8Array(data.buffer, data.byteOffset, byteLength),
      position,
      source,
    );
    return;
  }
  const elementSize = dtypeByteSize(dtype);
  const scratch = new Uint8Array(Math.min(readChunkBytes, byteLength));
  for (let done = 0; done < byteLength; done += scratch.length) {
    const chunk = scratch.subarray(0, Math.min(scratch.length, byteLength - done));
    await readExactly(handle, chunk, position + done, source);
    decodeFloats(chunk, dtype, data, done / elementSize);
  }
}

async function readExactly(
  handle: FileHandle,
  target: Uint8Array,
  position: number,
  source: string,
): Promise<void> {
  for (let done = 0; done < target.length;) {
    const length = Math.min(target.length - done, readChunkBytes);
    const { bytesRead } = await handle.read(target, done, length, position + done);
    if (bytesRead === 0) {
      throw new FileFormatError(
        source,
        `file ended at byte ${position + done} while reading; it was truncated or changed during the read`,
      );
    }
    done += bytesRead;
  }
}
