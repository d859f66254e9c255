import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import { getTask, taskNames, taskSpecSchema } from './registry.js';
import { createVerifier } from './verifiers/index.js';

describe('getTask', () => {
  it('builds every built-in task with its defaults', async () => {
    for (const name of ['arithmetic-chain', 'string-pipeline', 'solve-check-final']) {
      const task = await getTask({ name });
      assert.equal(task.name, name);
      assert.equal(task.protocol.roles.length, 3);
      assert.match(task.description, /difficulty 2/);
    }
  });

  it('passes options through', async () => {
    const task = await getTask({ name: 'arithmetic-chain', difficulty: 4, roles: 5 });
    assert.equal(task.protocol.roles.length, 5);
    const [problem] = task.split('train', { seed: 1, count: 1 });
    assert.equal(problem!.prompt.split('|').length, 5);
  });

  it('lists the valid names for an unknown or missing name', async () => {
    await assert.rejects(getTask({ name: 'chess' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.path, 'task.name');
      assert.match(
        error.message,
        /unknown task "chess" \(valid: arithmetic-chain, string-pipeline, solve-check-final, worked-chain, convention, jsonl\)/,
      );
      return true;
    });
    await assert.rejects(
      getTask({ difficulty: 2 }, 'run.task'),
      /run\.task\.name: missing \(valid: /,
    );
    await assert.rejects(getTask('arithmetic-chain'), /missing \(valid: /);
  });

  it('rejects bad options with their path and unknown keys with the valid ones', async () => {
    await assert.rejects(getTask({ name: 'string-pipeline', difficulty: 0 }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /difficulty/);
      return true;
    });
    await assert.rejects(
      getTask({ name: 'solve-check-final', dificulty: 3 }),
      /unknown key "dificulty" \(valid keys: name, difficulty, roles, evalFraction\)/,
    );
    await assert.rejects(getTask({ name: 'solve-check-final', roles: 1 }), /roles/);
  });

  describe('jsonl', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-registry-'));
    after(() => rmSync(directory, { recursive: true, force: true }));
    const file = path.join(directory, 'math.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ prompt: 'half of 1?', answer: '1/2', split: 'eval' })}\n`,
    );

    it('loads a dataset with the named verifier', async () => {
      const task = await getTask({ name: 'jsonl', path: file, verifier: 'math' });
      const [problem] = task.split('eval', { seed: 0 });
      assert.equal(task.verify(problem!, 'so \\boxed{\\frac{1}{2}}').correct, true);
    });

    it('needs a path and a verifier, and lists the valid verifiers', async () => {
      await assert.rejects(getTask({ name: 'jsonl', verifier: 'math' }), /path/);
      await assert.rejects(getTask({ name: 'jsonl', path: file }), /verifier/);
      await assert.rejects(
        getTask({ name: 'jsonl', path: file, verifier: { name: 'fuzzy' } }),
        /verifier/,
      );
    });
  });

  it('exposes a schema that accepts every name and fills defaults', () => {
    assert.deepEqual(taskNames, [
      'arithmetic-chain',
      'string-pipeline',
      'solve-check-final',
      'worked-chain',
      'convention',
      'jsonl',
    ]);
    assert.deepEqual(taskSpecSchema.parse({ name: 'arithmetic-chain' }), {
      name: 'arithmetic-chain',
      difficulty: 2,
      roles: 3,
      evalFraction: 0.2,
    });
    assert.equal(taskSpecSchema.safeParse({ name: 'chess' }).success, false);
  });
});

describe('createVerifier', () => {
  it('builds each verifier by name or with options', () => {
    assert.equal(createVerifier('exact').verify('a', ' a ').correct, true);
    assert.equal(
      createVerifier({ name: 'exact', caseSensitive: false }).verify('A', 'a').correct,
      true,
    );
    assert.equal(createVerifier('numeric').verify('1000', '1,000').correct, true);
    assert.equal(
      createVerifier({ name: 'numeric', relativeTolerance: 0.01 }).verify('100', '100.5').correct,
      true,
    );
    assert.equal(createVerifier('math').verify('0.5', '\\boxed{\\frac12}').correct, true);
    assert.equal(
      createVerifier({ name: 'choice', letters: 'ABCDEF' }).verify('F', '(F)').correct,
      true,
    );
  });

  it('lists the valid verifiers and rejects options of another verifier', () => {
    assert.throws(
      () => createVerifier('fuzzy', 'task.verifier'),
      /task\.verifier: unknown verifier "fuzzy" \(valid: exact, numeric, math, choice\)/,
    );
    assert.throws(
      () => createVerifier({ name: 'exact', relativeTolerance: 1 }),
      /relativeTolerance/,
    );
    assert.throws(() => createVerifier({ name: 'choice', letters: 'A1' }), /letters/);
  });

  it('says the same inside a config (an unknown verifier is named, not "Invalid input")', () => {
    const parse = (verifier: unknown) => () =>
      parseWithSchema(taskSpecSchema, { name: 'jsonl', path: 'problems.jsonl', verifier }, 'task');
    assert.throws(
      parse('fuzzy'),
      /task: verifier: unknown verifier "fuzzy" \(valid: exact, numeric, math, choice, or an object \{ name, …options \}\)/,
    );
    assert.throws(
      parse(undefined),
      /task: verifier: a verifier is required: exact, numeric, math, choice, or an object/,
    );
    assert.throws(
      parse({ name: 'math', fallback: 'guess' }),
      /task: verifier: verifier "math": fallback: Invalid option: expected one of "whole-text"\|"none"/,
    );
  });
});
