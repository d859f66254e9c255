/**
 * Words for a value that user code threw or returned, safe whatever it is: `undefined`, a
 * BigInt, an object whose getters throw, a proxy, an array of ten million items. Never throws,
 * never longer than `maxCharacters` (an error message is not the place for 20 MB of JSON).
 */
export function describeValue(value: unknown, maxCharacters = 200): string {
  try {
    return truncate(describe(value), maxCharacters);
  } catch {
    return 'a value that cannot be described (its getters throw)';
  }
}

/** What a thrown value says: an Error's message (safely), else the value described. */
export function describeThrown(value: unknown, maxCharacters = 500): string {
  try {
    if (
      value instanceof Error ||
      (typeof value === 'object' && value !== null && 'message' in value)
    ) {
      const message = (value as { message?: unknown }).message;
      if (typeof message === 'string' && message !== '') return truncate(message, maxCharacters);
    }
  } catch {
    return 'an error whose message cannot be read (its getter throws)';
  }
  return `a non-Error value: ${describeValue(value, maxCharacters)}`;
}

function describe(value: unknown): string {
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'bigint':
      return `${value.toString()}n (a BigInt)`;
    case 'symbol':
      return value.toString();
    case 'function':
      return `a function ${value.name || '(anonymous)'}`;
    case 'string':
      return JSON.stringify(value.length > 120 ? `${value.slice(0, 120)}…` : value);
    case 'number':
    case 'boolean':
      return String(value);
  }
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length} items`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.byteLength} bytes`;
  const keys = Object.keys(value);
  const shown = keys.slice(0, 8).map((key) => {
    const entry = (value as Record<string, unknown>)[key];
    return `${key}: ${typeof entry === 'object' && entry !== null ? '…' : describe(entry)}`;
  });
  return `{ ${shown.join(', ')}${keys.length > 8 ? `, … (${keys.length} keys)` : ''} }`;
}

function truncate(text: string, maxCharacters: number): string {
  return text.length > maxCharacters ? `${text.slice(0, maxCharacters - 1)}…` : text;
}
