import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { readResultFile } from '../../report/result-file.js';
import { runCli } from '../test-support/run-cli.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-demo-cli-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('the demo, run by npm from a project, ends with next steps that work where the user typed', async () => {
  // `npm run demo` typed in scratch/; npm runs it in scratch/app (the project root).
  const project = path.join(scratch, 'app');
  mkdirSync(project);
  const result = await runCli(
    [
      'demo',
      '--budget-generated-tokens',
      '3000',
      '--evaluation-problems',
      '20',
      '--run-dir',
      path.join('runs', 'first'),
      '--result',
      path.join(scratch, 'demo.json'),
    ],
    { cwd: project, env: { npm_command: 'run-script', INIT_CWD: scratch } },
  );
  assert.equal(result.code, 0, result.stderr);
  // Without a terminal, progress lines name every figure.
  assert.match(
    result.stderr,
    /\n {2}stage 1\/~?\d+ reward \d\.\d{3} token-KL \d\.\de[+-]\d+ updates \d+ out-of-region \d+, [\d,]+\/3,000 tokens\n/,
  );
  // Each statistic of the summary comes with a line reading it.
  assert.match(result.stdout, /eval accuracy after: .*\n {8}→ [+-]\d+\.\d points, /);
  assert.match(result.stdout, /trust region: .*\n {8}→ /);
  assert.match(result.stdout, /second order, on held-out prompts: mean .*\n {8}→ it /);
  // --result: the figures as a result file, with the command that reproduces them.
  const record = await readResultFile(path.join(scratch, 'demo.json'));
  assert.equal(
    record.command,
    `node bin/teamtr.js demo --run-dir runs/first --result ${path.join(scratch, 'demo.json')} --budget-generated-tokens 3000 --evaluation-problems 20`,
  );
  assert.equal(record.title, 'The demo (seed 0)');
  assert.deepEqual(record.tables[0]!.rows[0]!.slice(0, 2), [0, 'teamtr']);
  assert.match(record.tables[0]!.caption, /^Held-out team accuracy \d+\.\d% → \d+\.\d%: /);
  assert.equal(record.tables[1]!.rows.length, 4, 'both certificates, on both batches');
  const lines = result.stdout.trimEnd().split('\n');
  assert.deepEqual(
    lines.slice(-5).map((line) => line.replace(/ +#.*$/, '')),
    [
      'Next steps:',
      '  npx teamtr dashboard app/runs/first',
      '  npx teamtr report app/runs/first',
      '  npx teamtr eval app/runs/first',
      '  npx teamtr serve app/runs/first',
    ],
  );
});
