import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readResultFile } from '../../report/result-file.js';
import { runCli } from '../test-support/run-cli.js';

const small = [
  '--agent-counts',
  '2,3',
  '--games',
  '4',
  '--families',
  'random,chain',
  '--bootstrap-samples',
  '100',
];

test('teamtr theory --json prints one JSON object and writes the report, plot and results', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-theory-'));
  try {
    const out = path.join(directory, 'nested', 'theory');
    const { code, stdout } = await runCli(['theory', '--json', '--out', out, ...small]);
    assert.equal(code, 0);
    assert.equal(stdout.trim().split('\n').length, 1);
    const summary = JSON.parse(stdout);
    for (const key of [
      'stale_slope',
      'stale_ci',
      'fresh_slope',
      'fresh_ci',
      'games',
      'updates',
      'certificate_violations',
      'max_violation',
    ]) {
      assert.ok(key in summary, key);
    }
    assert.equal(typeof summary.stale_slope, 'number');
    assert.equal(summary.stale_ci.length, 2);
    assert.equal(summary.games, 16);
    assert.equal(summary.updates, 2 * 4 * ((2 + 3) * 2 + 2));
    assert.equal(summary.certificate_violations, 0);
    assert.equal(summary.family, 'random');
    assert.deepEqual(readdirSync(out).sort(), ['report.md', 'results.json', 'scaling.svg']);
    const report = readFileSync(path.join(out, 'report.md'), 'utf8');
    assert.ok(report.includes(summary.stale_slope.toFixed(2)));
    assert.ok(readFileSync(path.join(out, 'scaling.svg'), 'utf8').startsWith('<svg'));
    const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
    assert.equal(results.games.length, 16);
    assert.equal(results.summary.stale_slope, summary.stale_slope);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('teamtr theory prints a table for people', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-theory-'));
  try {
    const { code, stdout } = await runCli(['theory', '--out', directory, ...small]);
    assert.equal(code, 0);
    assert.match(stdout, /family random: mean per game/);
    assert.match(stdout, /slopes of log\(mean\) on log\(N\)/);
    assert.match(stdout, /wrote .*report\.md/);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('bad options fail with a message that says what to change, and write nothing', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-theory-'));
  try {
    const out = path.join(directory, 'never');
    const family = await runCli(['theory', '--out', out, '--families', 'poker']);
    assert.equal(family.code, 2);
    assert.match(family.stderr, /valid: "random", "dense", "consensus", "chain"/);
    const size = await runCli(['theory', '--out', out, '--agent-counts', '2,14']);
    assert.equal(size.code, 2);
    assert.match(size.stderr, /lower the largest N/);
    const notNumber = await runCli(['theory', '--out', out, '--games', 'many']);
    assert.notEqual(notNumber.code, 0);
    assert.match(notNumber.stderr, /expected a number, got "many"/);
    assert.deepEqual(readdirSync(directory), []);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('an output directory that cannot be created is reported, not crashed on', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-theory-'));
  try {
    const blocker = path.join(directory, 'a-file');
    writeFileSync(blocker, 'not a directory');
    const { code, stderr } = await runCli([
      'theory',
      '--out',
      path.join(blocker, 'theory'),
      ...small,
    ]);
    assert.equal(code, 2);
    assert.match(stderr, /choose another --out directory/);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

test('teamtr theory --result writes a result file that reproduces the run', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-theory-result-'));
  try {
    const resultPath = path.join(directory, 'theory.json');
    const argv = ['theory', '--out', path.join(directory, 'out'), ...small];
    const { code, stderr } = await runCli([...argv, '--result', resultPath, '--quiet-host']);
    assert.equal(code, 0, stderr);
    const record = await readResultFile(resultPath);
    assert.equal(
      record.command,
      `node bin/teamtr.js theory --agent-counts 2,3 --games 4 --families random,chain --bootstrap-samples 100 --out ${path.join(directory, 'out')} --result ${resultPath} --quiet-host`,
    );
    assert.equal(record.host.quiet, true);
    assert.deepEqual(
      record.tables[0]!.rows.map((row) => row[0]),
      ['random', 'chain'],
    );
    assert.match(
      record.tables[0]!.caption,
      /^The certificate never exceeded the true improvement over 96 exactly computed updates/,
    );
    assert.ok(record.measuredAt && record.wallSeconds! > 0);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
