import { FileFormatError } from '../util/errors.js';
import { formatShape, shapeElementCount } from '../util/named-array.js';

/**
 * The safetensors header: parsing and validation. The header is untrusted input, so every
 * number in it is checked against the real size of the file before anything is allocated or
 * read on its strength; a file that fails a check gets a FileFormatError naming the problem.
 *
 * Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON starting with `{` (optionally
 * padded with spaces), then the data region. The JSON maps tensor names to
 * `{dtype, shape, data_offsets: [begin, end]}` (byte offsets relative to the data region), plus
 * an optional `__metadata__` object of string → string. The data region must be covered exactly:
 * no overlaps, no holes, nothing trailing.
 */

/** Bytes per element of every dtype the format defines with a whole-byte size. */
const dtypeByteSizes = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
} as const;

export type SafetensorsDtype = keyof typeof dtypeByteSizes;

/** The dtypes this project reads (each converts to float32). */
export const readableDtypes = ['F32', 'F16', 'BF16', 'F64'] as const;
export type ReadableDtype = (typeof readableDtypes)[number];

export function isReadableDtype(dtype: SafetensorsDtype): dtype is ReadableDtype {
  return (readableDtypes as readonly string[]).includes(dtype);
}

export function dtypeByteSize(dtype: SafetensorsDtype): number {
  return dtypeByteSizes[dtype];
}

/** The reference implementation refuses headers above 100 MB; so do we. */
export const maxHeaderBytes = 100_000_000;

/** Where one tensor's bytes lie: `begin`/`end` are relative to the start of the data region. */
export interface SafetensorsEntry {
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  /** Tensors in header order. */
  tensors: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
  /** Absolute file offset of the data region: 8 + the JSON header's length. */
  dataStart: number;
  dataByteLength: number;
}

/**
 * Reads the header length from the 8-byte prefix and checks it against the limit and against
 * the bytes that actually follow, so no allocation ever trusts it blindly.
 */
export function parseHeaderLength(
  prefix: Uint8Array,
  fileByteLength: number,
  source: string,
): number {
  if (fileByteLength < 8) {
    throw new FileFormatError(
      source,
      `file is ${fileByteLength} bytes, shorter than the 8-byte header length prefix of safetensors; the file is truncated or not safetensors`,
    );
  }
  const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const claimed = view.getBigUint64(0, true);
  if (claimed > BigInt(maxHeaderBytes)) {
    throw new FileFormatError(
      source,
      `header length claims ${claimed} bytes, above the ${maxHeaderBytes}-byte limit; the file is corrupt or not safetensors`,
    );
  }
  const headerLength = Number(claimed);
  if (headerLength > fileByteLength - 8) {
    throw new FileFormatError(
      source,
      `header length claims ${headerLength} bytes but only ${fileByteLength - 8} bytes follow the prefix; the file is truncated`,
    );
  }
  return headerLength;
}

/** Parses and validates the JSON header; `dataByteLength` is what the file holds after it. */
export function parseHeader(
  headerBytes: Uint8Array,
  dataByteLength: number,
  source: string,
): SafetensorsHeader {
  const json = parseHeaderJson(headerBytes, source);
  const tensors = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(json)) {
    if (name === '__metadata__') metadata = parseMetadata(value, source);
    else tensors.set(name, parseEntry(name, value, dataByteLength, source));
  }
  checkCoverage(tensors, dataByteLength, source);
  return { tensors, metadata, dataStart: 8 + headerBytes.length, dataByteLength };
}

function parseHeaderJson(headerBytes: Uint8Array, source: string): Record<string, unknown> {
  // Any JSON text that starts with "{" and parses is an object, so this is the object check.
  if (headerBytes.length === 0 || headerBytes[0] !== 0x7b) {
    throw new FileFormatError(
      source,
      'header is not a JSON object (it does not start with "{"); the file is not safetensors',
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    throw new FileFormatError(source, 'header is not valid UTF-8; the file is corrupt');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new FileFormatError(
      source,
      `header is not valid JSON (${(error as Error).message}); the file is corrupt or truncated`,
    );
  }
  return json as Record<string, unknown>;
}

function parseMetadata(value: unknown, source: string): Record<string, string> {
  if (value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new FileFormatError(
      source,
      `__metadata__ is ${describeJson(value)}, expected an object of strings`,
    );
  }
  const entries = Object.entries(value);
  for (const [key, entry] of entries) {
    if (typeof entry !== 'string') {
      throw new FileFormatError(
        source,
        `__metadata__ "${key}" is ${describeJson(entry)}; metadata values must be strings`,
      );
    }
  }
  // fromEntries defines own properties, so even a "__proto__" key stays plain data.
  return Object.fromEntries(entries) as Record<string, string>;
}

const entryFields = ['dtype', 'shape', 'data_offsets'];

function parseEntry(
  name: string,
  value: unknown,
  dataByteLength: number,
  source: string,
): SafetensorsEntry {
  const fail = (detail: string): never => {
    throw new FileFormatError(source, `tensor "${name}": ${detail}`);
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return fail(`entry is ${describeJson(value)}, expected {dtype, shape, data_offsets}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!entryFields.includes(key))
      fail(`unknown field "${key}" (valid fields: ${entryFields.join(', ')})`);
  }
  for (const key of entryFields) if (!(key in record)) fail(`missing field "${key}"`);

  const { dtype, shape, data_offsets: offsets } = record;
  if (typeof dtype !== 'string' || !Object.hasOwn(dtypeByteSizes, dtype)) {
    fail(`unknown dtype ${describeJson(dtype)} (known: ${Object.keys(dtypeByteSizes).join(', ')})`);
  }
  if (!isNonNegativeIntegerArray(shape)) {
    fail(`shape ${describeJson(shape)} is not an array of non-negative integers`);
  }
  if (!isNonNegativeIntegerArray(offsets) || offsets.length !== 2) {
    fail(
      `data_offsets ${describeJson(offsets)} is not a pair of non-negative integers [begin, end]`,
    );
  }
  const [begin, end] = offsets as number[];
  if (begin > end) fail(`data_offsets [${begin}, ${end}] has begin after end`);
  if (end > dataByteLength) {
    fail(
      `data_offsets [${begin}, ${end}] run past the end of the data region (${dataByteLength} bytes); the file is truncated or the header is wrong`,
    );
  }
  const typedShape = shape as number[];
  const elementCount = shapeElementCount(typedShape);
  const elementSize = dtypeByteSizes[dtype as SafetensorsDtype];
  if (elementCount === null || elementCount * elementSize !== end - begin) {
    const needed =
      elementCount === null
        ? 'more bytes than can be addressed'
        : `${elementCount * elementSize} bytes`;
    fail(
      `dtype ${dtype} with shape ${formatShape(typedShape)} needs ${needed} but data_offsets [${begin}, ${end}] span ${end - begin}`,
    );
  }
  return { dtype: dtype as SafetensorsDtype, shape: typedShape, begin, end };
}

/** Every data byte belongs to exactly one tensor: no overlap, no hole, nothing trailing. */
function checkCoverage(
  tensors: Map<string, SafetensorsEntry>,
  dataByteLength: number,
  source: string,
): void {
  // Empty tensors hold no bytes, so they can neither overlap nor fill a hole.
  const ranges = [...tensors]
    .filter(([, entry]) => entry.end > entry.begin)
    .sort(([, left], [, right]) => left.begin - right.begin || left.end - right.end);
  let covered = 0;
  let previousName = '';
  for (const [name, entry] of ranges) {
    if (entry.begin < covered) {
      throw new FileFormatError(
        source,
        `tensor "${name}" data_offsets [${entry.begin}, ${entry.end}] overlap tensor "${previousName}" (which ends at ${covered}); the header is corrupt`,
      );
    }
    if (entry.begin > covered) {
      throw new FileFormatError(
        source,
        `data bytes [${covered}, ${entry.begin}) belong to no tensor; safetensors requires the data region to be fully indexed`,
      );
    }
    covered = entry.end;
    previousName = name;
  }
  if (covered !== dataByteLength) {
    throw new FileFormatError(
      source,
      `the data region has ${dataByteLength} bytes but the tensors cover only the first ${covered}; trailing bytes belong to no tensor`,
    );
  }
}

function isNonNegativeIntegerArray(value: unknown): value is number[] {
  return (
    Array.isArray(value) &&
    value.every((item) => typeof item === 'number' && Number.isSafeInteger(item) && item >= 0)
  );
}

/** A short description of a JSON value for messages: `null`, `an array`, `"text"`, `[1, -2]`. */
function describeJson(value: unknown): string {
  if (value === undefined) return 'missing';
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    // A hostile header can nest arrays deeper than the stack; say what it is instead.
    return Array.isArray(value) ? 'a deeply nested array' : `a deeply nested ${typeof value}`;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
