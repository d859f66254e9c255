import { isDeepStrictEqual } from 'node:util';
import { readBoundedText, readBoundedTextSync, type FileSizeLimit } from '../util/bounded-file.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';

/** A JSON object, as stored in `*.json` files next to tensors. */
export type JsonObject = Record<string, unknown>;

/**
 * Reads and parses a JSON file through the bounded reader (a regular file within `limit`); a
 * missing file, a device or bad JSON is a FileFormatError naming the file.
 */
export async function readJsonFile(
  filePath: string,
  limit: FileSizeLimit = 'jsonBytes',
): Promise<unknown> {
  return parseJsonText(filePath, await readBoundedText(filePath, { limit, what: 'a JSON file' }));
}

/** The synchronous twin of readJsonFile. */
export function readJsonFileSync(filePath: string, limit: FileSizeLimit = 'jsonBytes'): unknown {
  return parseJsonText(filePath, readBoundedTextSync(filePath, { limit, what: 'a JSON file' }));
}

function parseJsonText(filePath: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new FileFormatError(filePath, `not valid JSON (${(error as Error).message})`);
  }
}

/** Reads a JSON file that must hold an object. */
export async function readJsonObjectFile(
  filePath: string,
  limit: FileSizeLimit = 'jsonBytes',
): Promise<JsonObject> {
  const value = await readJsonFile(filePath, limit);
  if (!isJsonObject(value)) {
    throw new FileFormatError(filePath, `expected a JSON object, got ${describeKind(value)}`);
  }
  return value;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Refuses values that would not survive JSON unchanged (NaN, Infinity, undefined, class
 * instances, typed arrays), so what is saved is exactly what loads back.
 */
export function assertJsonRoundTrips(value: unknown, what: string): void {
  const text = JSON.stringify(value);
  if (text === undefined || !isDeepStrictEqual(JSON.parse(text), value)) {
    throw new TeamtrError(
      `${what} does not survive JSON unchanged (NaN, Infinity, undefined, typed arrays and class instances do not); convert it to plain JSON first`,
    );
  }
}

function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
