import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { describeLimit, formatAmount, inputLimits, limitOf, type InputLimit } from './limits.js';

const guide = readFileSync(new URL('../../docs/guides/limits.md', import.meta.url), 'utf8');

describe('input limits', () => {
  test('docs/guides/limits.md lists every limit with its default', () => {
    for (const limit of Object.values(inputLimits) as InputLimit[]) {
      const row = guide.split('\n').find((line) => line.startsWith(`| \`${limit.variable}\` |`));
      assert.ok(row, `${limit.variable} is missing from docs/guides/limits.md`);
      assert.ok(
        row.includes(`| ${formatAmount(limit.defaultValue, limit.unit)} |`),
        `${limit.variable}: the guide's default differs from ${formatAmount(limit.defaultValue, limit.unit)}`,
      );
    }
  });

  test('an environment variable raises a limit; a bad one is refused, naming it', () => {
    try {
      process.env.TEAMTR_MEMORY_SHARE = '0.25';
      assert.equal(limitOf('memoryShare'), 0.25);
      process.env.TEAMTR_MAX_TEMPLATE_STEPS = '5000';
      assert.equal(
        describeLimit('templateSteps'),
        '5,000 steps (TEAMTR_MAX_TEMPLATE_STEPS raises it)',
      );
      for (const bad of ['1.5', '0', 'all'])
        assert.throws(() => {
          process.env.TEAMTR_MEMORY_SHARE = bad;
          limitOf('memoryShare');
        }, /TEAMTR_MEMORY_SHARE: .* is not a valid limit: give a number in \(0, 1\]/);
      process.env.TEAMTR_MAX_TEMPLATE_STEPS = '2.5';
      assert.throws(() => limitOf('templateSteps'), /a positive whole number of steps/);
    } finally {
      delete process.env.TEAMTR_MEMORY_SHARE;
      delete process.env.TEAMTR_MAX_TEMPLATE_STEPS;
    }
  });
});
