import { isUtf8 } from 'node:buffer';
import { openRegularFile } from '../util/bounded-file.js';
import { FileFormatError } from '../util/errors.js';
import { describeLimit, formatBytes, limitOf } from '../util/limits.js';

/**
 * The lines of a JSONL file, in one pass, in time linear in the file: each line's pieces are
 * kept as they arrive and joined once at its end (joining at every chunk made a 100 MB line
 * take 92 s). A line longer than TEAMTR_MAX_DATASET_LINE_BYTES is refused as soon as it passes
 * the limit, naming it, before it is decoded; so is a line that is not UTF-8 (decoding would
 * turn its bytes into U+FFFD and train on prompts that are not the dataset's), and a file that
 * grows past TEAMTR_MAX_DATASET_BYTES while it is read. Lines end at "\n"; a "\r" before it
 * (CRLF files) is not part of the line.
 */
export async function* datasetLines(
  path: string,
): AsyncGenerator<{ number: number; text: string }> {
  const maxLineBytes = limitOf('datasetLineBytes');
  const maxFileBytes = limitOf('datasetBytes');
  const { handle } = await openRegularFile(path, 'a .jsonl dataset');
  let pieces: Buffer[] = [];
  let lineBytes = 0;
  let fileBytes = 0;
  let number = 1;
  const finish = () => {
    const line = decodeLine(
      path,
      number,
      pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, lineBytes),
    );
    pieces = [];
    lineBytes = 0;
    return { number: number++, text: line };
  };
  try {
    for (;;) {
      // A fresh chunk per read: a pending line keeps views of earlier ones, never copies.
      const chunk = Buffer.allocUnsafe(1 << 20);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      fileBytes += bytesRead;
      if (fileBytes > maxFileBytes)
        throw new FileFormatError(
          path,
          `grew past ${describeLimit('datasetBytes')} while it was read`,
        );
      let start = 0;
      for (let end = chunk.indexOf(0x0a, 0); start < bytesRead; end = chunk.indexOf(0x0a, start)) {
        const stop = end < 0 || end >= bytesRead ? bytesRead : end;
        lineBytes += stop - start;
        if (lineBytes > maxLineBytes) throw lineTooLong(path, number, maxLineBytes);
        if (stop > start) pieces.push(chunk.subarray(start, stop));
        if (stop === bytesRead) break;
        yield finish();
        start = stop + 1;
      }
    }
    if (lineBytes > 0) yield finish();
  } finally {
    await handle.close();
  }
}

function decodeLine(path: string, number: number, bytes: Buffer): string {
  if (!isUtf8(bytes))
    throw new FileFormatError(
      path,
      `line ${number} is not valid UTF-8 (save the file as UTF-8, or fix that line's bytes)`,
    );
  const text = bytes.toString('utf8');
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}

function lineTooLong(path: string, number: number, maxLineBytes: number): FileFormatError {
  return new FileFormatError(
    path,
    `line ${number} is longer than ${formatBytes(maxLineBytes)}; one problem (prompt, answer and metadata) is at most ${describeLimit('datasetLineBytes')}. A prompt this long would not fit a model's context: shorten it, or drop the line`,
  );
}
