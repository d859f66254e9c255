import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { trainConfigSchema } from '../../trainer/config/train-config.js';
import { createProgram } from '../main.js';
import { configEntries, describeType } from './config-entries.js';
import { schemaDocs } from './schema-docs.generated.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function help(command: string): string {
  const found = createProgram().commands.find((candidate) => candidate.name() === command)!;
  return found.helpInformation({ error: false });
}

describe('--help', () => {
  test('says what a setting means, not only its default', () => {
    assert.match(
      help('train').replace(/\s+/g, ' '),
      /--trust-region-delta <value> trustRegion\.delta: δ: the largest mean token-level KL\(π_old ‖ π_new\) over the agent's turns an update may reach; .* \(default 0\.01\)/,
    );
  });

  test("demo's flags show the defaults the demo runs (configs/demo.yaml), not the schema's", () => {
    const text = help('demo').replace(/\s+/g, ' ');
    assert.match(text, /budget\.generatedTokens: .*\(default 600000, from configs\/demo\.yaml\)/);
    assert.match(text, /evaluation\.problems: .*\(default 1000, from configs\/demo\.yaml\)/);
  });
});

describe('the config read as documented entries', () => {
  const entries = configEntries(trainConfigSchema, schemaDocs.train);
  const entry = (pathText: string, variant: string | null = null) =>
    entries.find((found) => found.path === pathText && found.variant === variant);

  test('types, bounds, defaults and meanings come from the schema and its comments', () => {
    assert.deepEqual(
      { ...entry('rollout.groupSize'), description: undefined },
      {
        docsKey: 'rollout.groupSize',
        path: 'rollout.groupSize',
        keys: ['rollout', 'groupSize'],
        variant: null,
        type: 'integer ≥ 2, ≤ 4096',
        default: '8',
        defaultInWords: false,
        description: undefined,
        hasChildren: false,
      },
    );
    assert.equal(entry('agents[].delta')?.default, 'trustRegion.delta');
    assert.equal(entry('agents[].delta')?.defaultInWords, true);
    assert.match(entry('agents[].lora.alpha')?.description ?? '', /alpha \/ rank/);
    assert.equal(entry('task.path', 'jsonl')?.type, 'string (non-empty)');
    assert.equal(entry('task.path'), undefined, 'task keys belong to a task kind');
  });

  test('types read as a person writes them', () => {
    assert.equal(describeType(z.enum(['a', 'b']).default('a')), '"a" | "b"');
    assert.equal(describeType(z.number().gt(0).lt(1)), 'number > 0, < 1');
    assert.equal(
      describeType(z.array(z.string()).max(3).optional()),
      'list of strings (at most 3 items)',
    );
  });
});

describe('the committed references', () => {
  test('are what the schema, its comments and the CLI render to (npm run docs)', async () => {
    const result = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', path.join(root, 'scripts', 'reference-docs.mjs'), '--check'],
        { cwd: root, timeout: 120_000 },
        (error, _stdout, stderr) => resolve({ code: error ? 1 : 0, stderr }),
      ),
    );
    assert.equal(result.code, 0, result.stderr);
  });
});
