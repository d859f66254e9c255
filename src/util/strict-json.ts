import { FileFormatError } from './errors.js';

/**
 * JSON.parse, refusing an object that names a key twice. JSON.parse keeps the last value
 * silently, so `{"seed": 1, …, "seed": 2}` in a config would run with a value the user may not
 * have meant; YAML configs are refused for the same mistake, and JSON ones should be too. The
 * error names the key's path. Linear in the text: one scan after JSON.parse has checked syntax.
 */
export function parseStrictJson(text: string, source: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new FileFormatError(source, `is not valid JSON: ${(error as Error).message}`);
  }
  const duplicate = firstDuplicateKey(text);
  if (duplicate !== null)
    throw new FileFormatError(
      source,
      `the key "${duplicate.path}" appears twice (on lines ${duplicate.firstLine} and ${duplicate.line}); keep one`,
    );
  return value;
}

type Frame =
  | { kind: 'object'; keys: Map<string, number>; key: string | null }
  | { kind: 'array'; index: number };

interface DuplicateKey {
  path: string;
  firstLine: number;
  line: number;
}

/** The first key written twice in one object of valid JSON `text`, with where it is. */
function firstDuplicateKey(text: string): DuplicateKey | null {
  const stack: Frame[] = [];
  let line = 1;
  for (let index = 0; index < text.length; index++) {
    const character = text.charCodeAt(index);
    if (character === 0x0a) line++;
    else if (character === 0x7b) stack.push({ kind: 'object', keys: new Map(), key: null });
    else if (character === 0x5b) stack.push({ kind: 'array', index: 0 });
    else if (character === 0x7d || character === 0x5d) stack.pop();
    else if (character === 0x2c) {
      const top = stack.at(-1);
      if (top?.kind === 'array') top.index++;
    } else if (character === 0x22) {
      const end = stringEnd(text, index);
      const top = stack.at(-1);
      if (top?.kind === 'object' && nextSignificant(text, end + 1) === 0x3a) {
        const key = JSON.parse(text.slice(index, end + 1)) as string;
        const firstLine = top.keys.get(key);
        if (firstLine !== undefined)
          return { path: pathOf([...stack.slice(0, -1)], key), firstLine, line };
        top.keys.set(key, line);
        top.key = key;
      }
      index = end;
    }
  }
  return null;
}

/** Index of the quote closing the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  for (let index = start + 1; index < text.length; index++) {
    const character = text.charCodeAt(index);
    if (character === 0x5c) index++;
    else if (character === 0x22) return index;
  }
  return text.length;
}

function nextSignificant(text: string, from: number): number {
  for (let index = from; index < text.length; index++) {
    const character = text.charCodeAt(index);
    if (character !== 0x20 && character !== 0x09 && character !== 0x0a && character !== 0x0d)
      return character;
  }
  return -1;
}

function pathOf(parents: readonly Frame[], key: string): string {
  let path = '';
  for (const frame of parents) {
    if (frame.kind === 'array') path += `[${frame.index}]`;
    else if (frame.key !== null) path += path ? `.${frame.key}` : frame.key;
  }
  return path ? `${path}.${key}` : key;
}
