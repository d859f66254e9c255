import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { parseOr } from './schema.js';

class RefusalForTest extends Error {}

const schema = z.strictObject({
  steps: z.number().int().positive(),
  name: z.string().default('run'),
});

describe('parseOr', () => {
  test('returns the parsed value, defaults filled in, without building an error', () => {
    let refusals = 0;
    const parsed = parseOr(schema, { steps: 3 }, () => {
      refusals++;
      return new RefusalForTest('unused');
    });
    assert.deepEqual(parsed, { steps: 3, name: 'run' });
    assert.equal(refusals, 0);
  });

  test('throws the very error the caller builds, from every issue with its path', () => {
    let seen: readonly z.core.$ZodIssue[] = [];
    const refusal = new RefusalForTest('refused');
    assert.throws(
      () =>
        parseOr(schema, { steps: -1, name: 7, stray: true }, (issues) => {
          seen = issues;
          return refusal;
        }),
      (error) => error === refusal,
    );
    assert.deepEqual(
      seen.map((issue) => [issue.code, issue.path.join('.')]),
      [
        ['too_small', 'steps'],
        ['invalid_type', 'name'],
        ['unrecognized_keys', ''],
      ],
    );
  });
});
