import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { reportError } from './errors.js';

function captured(error: unknown): { code: number; text: string } {
  const write = process.stderr.write.bind(process.stderr);
  let text = '';
  process.stderr.write = ((chunk: string) => {
    text += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: reportError(error), text };
  } finally {
    process.stderr.write = write;
  }
}

describe('reportError', () => {
  test('a full disk names the path and what to do, without a stack or "internal error"', () => {
    const error = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
      path: '/runs/x/checkpoint/.state.json.tmp-1-ab',
    });
    const { code, text } = captured(error);
    assert.equal(code, 2);
    assert.match(
      text,
      /the disk is full \(\/runs\/x\/checkpoint\/\.state\.json\.tmp-1-ab\): free some space/,
    );
    assert.doesNotMatch(text, /internal error|\n\s+at /);
  });

  test('a bug keeps its stack', () => {
    const { code, text } = captured(new TypeError('x is undefined'));
    assert.equal(code, 1);
    assert.match(text, /internal error \(please report it\):\nTypeError: x is undefined/);
  });
});
