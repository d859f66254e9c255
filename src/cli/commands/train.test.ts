import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import YAML from 'yaml';
import { readResultFile } from '../../report/result-file.js';
import { createTrainingFixture } from '../../trainer/test-support/fixture.js';

const mainModule = fileURLToPath(new URL('../main.ts', import.meta.url));
const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/** Runs the real CLI in a child process; resolves with its exit code and output. */
function teamtr(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `const { main } = await import(${JSON.stringify(mainModule)}); process.exitCode = await main(${JSON.stringify(argv)});`;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { env: { ...process.env, TEAMTR_QUIET_BACKEND: '1' }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
        });
      },
    );
  });
}

describe('teamtr train / eval / compare (CLI, end to end)', () => {
  test('train from a YAML config with flag overrides, then eval the run', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const configPath = path.join(fixture.directory, 'team.yaml');
    writeFileSync(configPath, YAML.stringify(fixture.config));
    const runDirectory = path.join(fixture.directory, 'run');
    const trained = await teamtr([
      'train',
      '--config',
      configPath,
      '--run-dir',
      runDirectory,
      '--budget-max-stages',
      '2',
      '--json',
    ]);
    assert.equal(trained.code, 0, trained.stderr);
    const summary = JSON.parse(trained.stdout);
    assert.equal(summary.stages, 2);
    assert.equal(summary.schedule, 'teamtr');
    assert.ok(summary.evalBefore && summary.evalAfter);
    for (const file of [
      'config.json',
      'metrics.jsonl',
      'summary.json',
      'teamtr-run.json',
      'checkpoint/state.json',
    ]) {
      assert.ok(existsSync(path.join(runDirectory, file)), file);
    }
    assert.equal(
      JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8')).budget.maxStages,
      2,
    );
    const evaluated = await teamtr(['eval', runDirectory, '--problems', '8', '--json']);
    assert.equal(evaluated.code, 0, evaluated.stderr);
    const evaluation = JSON.parse(evaluated.stdout);
    assert.equal(evaluation.count, 8);
    assert.equal(evaluation.agents.length, 3);
    assert.ok(
      evaluation.interval[0] <= evaluation.accuracy &&
        evaluation.accuracy <= evaluation.interval[1],
    );
    const human = await teamtr([
      'train',
      '--config',
      configPath,
      '--run-dir',
      path.join(fixture.directory, 'human'),
      '--budget-max-stages',
      '1',
    ]);
    assert.match(human.stdout, /eval accuracy after/);
    assert.match(human.stdout, /teamtr dashboard /);
  });

  test('compare prints one JSON object per schedule at matched budgets', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const configPath = path.join(fixture.directory, 'team.json');
    writeFileSync(
      configPath,
      JSON.stringify({ ...fixture.config, budget: { generatedTokens: 400, maxStages: 3 } }),
    );
    const compared = await teamtr([
      'compare',
      '--config',
      configPath,
      '--schedules',
      'teamtr,joint',
      '--seeds',
      '0,1',
      '--out',
      path.join(fixture.directory, 'cmp'),
      '--json',
      '--result',
      path.join(fixture.directory, 'compare.json'),
    ]);
    assert.equal(compared.code, 0, compared.stderr);
    const rows = compared.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      rows.map((row) => row.schedule),
      ['teamtr', 'joint'],
    );
    for (const row of rows) {
      assert.deepEqual(row.seeds, [0, 1]);
      assert.ok(row.generatedTokensMean >= 400, 'each run spends at least the budget');
      // Per-stage reward change, out-of-sample and in-sample, averaged over the runs' summaries.
      const summaries = (row.runs as string[]).map(
        (run) =>
          JSON.parse(readFileSync(path.join(run, 'summary.json'), 'utf8')) as {
            stageImprovement: { outOfSamplePerStage: number; inSamplePerStage: number };
          },
      );
      const average = (key: 'outOfSamplePerStage' | 'inSamplePerStage') =>
        summaries.reduce((total, summary) => total + summary.stageImprovement[key], 0) /
        summaries.length;
      assert.ok(Math.abs(row.outOfSamplePerStageMean - average('outOfSamplePerStage')) < 1e-12);
      assert.ok(Math.abs(row.inSamplePerStageMean - average('inSamplePerStage')) < 1e-12);
    }
    // --result: the same comparison as a result file, one row per schedule.
    const record = await readResultFile(path.join(fixture.directory, 'compare.json'));
    assert.deepEqual(
      record.tables[0]!.rows.map((row) => row[0]),
      ['teamtr', 'joint'],
    );
    assert.match(
      record.tables[0]!.caption,
      /^At the same generated-token budget, (teamtr|joint) ends highest/,
    );
    assert.match(
      record.command,
      /^node bin\/teamtr\.js compare --config \S+ --schedules teamtr,joint --seeds 0,1 /,
    );
  });

  test('malformed configs and bad flags are clear errors (exit code 2, no stack trace)', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const bad = path.join(fixture.directory, 'bad.yaml');
    writeFileSync(bad, 'rollout: { groupSize: 8, problemsPerBach: 4 }\n');
    const unknownKey = await teamtr([
      'train',
      '--config',
      bad,
      '--run-dir',
      path.join(fixture.directory, 'a'),
    ]);
    assert.equal(unknownKey.code, 2);
    assert.match(
      unknownKey.stderr,
      /rollout: unknown key "problemsPerBach" \(valid keys: problemsPerBatch, groupSize/,
    );
    assert.doesNotMatch(unknownKey.stderr, /at .*\.ts:\d+/);
    assert.ok(
      !existsSync(path.join(fixture.directory, 'a')),
      'no run directory for an invalid config',
    );
    writeFileSync(bad, 'rollout: [unclosed\n');
    const notYaml = await teamtr(['train', '--config', bad]);
    assert.equal(notYaml.code, 2);
    assert.match(notYaml.stderr, /bad\.yaml: is not valid YAML/);
    const badFlag = await teamtr([
      'train',
      '--config',
      path.join(fixture.directory, 'missing.yaml'),
    ]);
    assert.match(badFlag.stderr, /missing\.yaml: file not found \(a config file\)/);
    const badSchedule = await teamtr([
      'train',
      '--schedule',
      'parallel',
      '--run-dir',
      path.join(fixture.directory, 'b'),
    ]);
    assert.match(
      badSchedule.stderr,
      /schedule: got "parallel" \(valid: "teamtr", "sequential-stale", "joint", "single"\)/,
    );
    const notRun = await teamtr(['eval', fixture.directory]);
    assert.equal(notRun.code, 2);
    assert.match(notRun.stderr, /not a teamtr run directory/);
    // --resume takes the run's own config: a config flag there is refused, not ignored.
    const resumeWithFlags = await teamtr([
      'train',
      '--resume',
      '--run-dir',
      path.join(fixture.directory, 'c'),
      '--rollout-group-size',
      '4',
    ]);
    assert.equal(resumeWithFlags.code, 2);
    assert.match(
      resumeWithFlags.stderr,
      /--resume continues a run with its own config\.json, so --rollout-group-size cannot change it/,
    );
    const badEndpoint = await teamtr(['train', '--resume', '--endpoint', 'critic']);
    assert.equal(badEndpoint.code, 2);
    assert.match(badEndpoint.stderr, /--endpoint takes AGENT=URL/);
  });
});

describe('teamtr train: interruption and resume flags', () => {
  test('Ctrl-C saves, writes an interrupted summary and exits 130', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const configPath = path.join(fixture.directory, 'team.yaml');
    writeFileSync(
      configPath,
      YAML.stringify({ ...fixture.config, budget: { generatedTokens: 10_000_000 } }),
    );
    const runDirectory = path.join(fixture.directory, 'run');
    const script = `const { main } = await import(${JSON.stringify(mainModule)}); process.exitCode = await main(${JSON.stringify(['train', '--config', configPath, '--run-dir', runDirectory])});`;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        env: { ...process.env, TEAMTR_QUIET_BACKEND: '1' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/eval after stage 0/.test(stderr) && !child.killed) child.kill('SIGINT');
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 130, stderr);
    const summary = JSON.parse(readFileSync(path.join(runDirectory, 'summary.json'), 'utf8'));
    assert.equal(summary.interrupted, true);
  });

  test('--resume without --run-dir asks for it', async () => {
    const result = await teamtr(['train', '--resume']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--resume continues an existing run: say which with --run-dir DIR/);
  });
});

describe('teamtr train --help', () => {
  test('lists every config flag, nested ones included, with its default', async () => {
    const help = await teamtr(['train', '--help']);
    // Each with what the setting means (the schema's doc comment), not only its default.
    assert.match(
      help.stdout,
      /--rollout-group-size <value> +rollout\.groupSize: Trajectories per prompt: .* \(default 8\)/,
    );
    assert.match(help.stdout, /--budget-generated-tokens <value>/);
    assert.match(
      help.stdout,
      /--trust-region-delta <value> +trustRegion\.delta: δ: the largest mean token-level KL.* \(default 0\.01\)/,
    );
    assert.doesNotMatch(help.stdout, /--task-fingerprint/, 'recorded by the trainer, not a flag');
  });
});
