import { existsSync } from 'node:fs';
import { openRegularFile } from '../util/bounded-file.js';
import { FileFormatError } from '../util/errors.js';
import { formatBytes, limitOf } from '../util/limits.js';
import type { MetricsRecord } from '../trainer/records.js';

/**
 * Reading metrics.jsonl while a run may still be appending to it: only complete lines (ending
 * in a newline) are read, so a half-written last line is left for the next read rather than
 * being an error, and reads resume from a byte offset so a live view reads each byte once.
 */

const recordTypes: ReadonlySet<string> = new Set([
  'update',
  'stage',
  'eval',
  'swap',
  'swap-recovery',
  'rollback',
]);

export interface MetricsChunk {
  records: MetricsRecord[];
  /** Byte offset just past the last complete line read: pass it as `offset` next time. */
  nextOffset: number;
  /** The file is shorter than `offset` (a resumed run truncated it): records restart from 0. */
  reset: boolean;
  /** Complete lines that are not JSON objects of a known record type. */
  skippedLines: number;
}

/** Parses the complete lines of `bytes`; a trailing line without its newline is not consumed. */
export function parseMetricsLines(bytes: Uint8Array): {
  records: MetricsRecord[];
  consumedBytes: number;
  skippedLines: number;
} {
  const lastNewline = bytes.lastIndexOf(0x0a);
  const consumedBytes = lastNewline + 1;
  const records: MetricsRecord[] = [];
  let skippedLines = 0;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, consumedBytes).toString('utf8');
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const record = parseRecord(line);
    if (record) records.push(record);
    else skippedLines++;
  }
  return { records, consumedBytes, skippedLines };
}

function parseRecord(line: string): MetricsRecord | null {
  try {
    const value: unknown = JSON.parse(line);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' && recordTypes.has(type) ? (value as MetricsRecord) : null;
  } catch {
    return null;
  }
}

/**
 * Reads the records appended to `filePath` since byte `offset`. A missing file has none yet; a
 * FIFO or device is refused at once, and no more than TEAMTR_MAX_METRICS_BYTES is read in one go.
 */
export async function readMetricsSince(filePath: string, offset: number): Promise<MetricsChunk> {
  if (!existsSync(filePath))
    return { records: [], nextOffset: 0, reset: offset > 0, skippedLines: 0 };
  const { handle, size } = await openRegularFile(filePath, "a run's metrics.jsonl");
  try {
    const reset = offset > size;
    const start = reset ? 0 : offset;
    const maxBytes = limitOf('metricsBytes');
    if (size - start > maxBytes)
      throw new FileFormatError(
        filePath,
        `${formatBytes(size - start)} of records to read, more than TEAMTR_MAX_METRICS_BYTES (${formatBytes(maxBytes)}); raise it to read this run`,
      );
    const bytes = Buffer.alloc(size - start);
    let filled = 0;
    while (filled < bytes.length) {
      const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, start + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const parsed = parseMetricsLines(bytes.subarray(0, filled));
    return {
      records: parsed.records,
      nextOffset: start + parsed.consumedBytes,
      reset,
      skippedLines: parsed.skippedLines,
    };
  } finally {
    await handle.close();
  }
}
