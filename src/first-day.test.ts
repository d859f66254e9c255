import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import {
  clientScript,
  readmeTask,
  readmeTeamConfig,
  taskFiles,
  teamConfig,
} from './test-support/first-day-project.js';

/**
 * A new user's first day, end to end, with nothing edited by hand: the packed tarball installed
 * into a fresh `npm init -y` project (CommonJS by default) with the packages a user adds (tsx,
 * openai, ai, @ai-sdk/*; from the npm cache `npm ci` filled), the README's task in code as
 * task.ts and as task.mjs, trained from the command line to a visible gain, served with
 * `teamtr serve RUN --task-module`, answered to the `openai` and `ai` packages, exported, and
 * its transcripts shown by `teamtr samples`.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'teamtr-first-day-'));
const project = path.join(workspace, 'project');
/**
 * The repository's own native addon, when built, serves the project too (the same C source):
 * compiling it again at install is src/package-install.test.ts's to check, and takes longer
 * than the rest of this day.
 */
const builtAddon = path.join(root, 'build', 'Release', 'teamtr_native.node');
const environment = {
  ...process.env,
  TEAMTR_QUIET_BACKEND: '1',
  XDG_CACHE_HOME: path.join(workspace, 'cache'),
  ...(existsSync(builtAddon) ? { TEAMTR_SKIP_NATIVE: '1', TEAMTR_NATIVE_ADDON: builtAddon } : {}),
};
after(() => rmSync(workspace, { recursive: true, force: true }));

function run(command: string, args: string[], cwd = project): string {
  return execFileSync(command, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: environment,
  });
}

/** A command that leaves the event loop free (to read a server's output meanwhile). */
const runAsync = promisify(execFile);

/** `npx teamtr …` in the project, as the user types it. */
const teamtr = (...args: string[]) => run('npx', ['teamtr', ...args]);

/** The newest modification time of the files under `directory` that `keep` accepts. */
function newest(directory: string, keep: (file: string) => boolean): number {
  let latest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(full, keep));
    else if (keep(full)) latest = Math.max(latest, statSync(full).mtimeMs);
  }
  return latest;
}

/** The package ships dist/: build it when src changed since (npm ci builds it in CI). */
function ensureBuilt(): void {
  const built = existsSync(path.join(root, 'dist', 'index.js'))
    ? newest(path.join(root, 'dist'), () => true)
    : 0;
  const source = newest(
    path.join(root, 'src'),
    (file) =>
      file.endsWith('.ts') &&
      !file.endsWith('.test.ts') &&
      !file.includes(`${path.sep}test-support${path.sep}`),
  );
  if (source > built) run('npm', ['run', 'build'], root);
}

/** The version the repository's own node_modules holds (so the npm cache has it). */
const installed = (name: string) =>
  `${name}@${(JSON.parse(readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`;

interface Summary {
  stages: number;
  evalBefore: { accuracy: number; count: number };
  evalAfter: { accuracy: number; count: number };
  warnings: string[];
}

let summary: Summary;

before(
  () => {
    ensureBuilt();
    const packed = JSON.parse(
      run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', workspace], root),
    ) as Array<{ filename: string }>;
    mkdirSync(project);
    run('npm', ['init', '-y']);
    assert.equal(
      (JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as { type?: string })
        .type ?? 'commonjs',
      'commonjs',
    );
    run('npm', [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      path.join(workspace, packed[0]!.filename),
      ...['tsx', 'openai', 'ai', '@ai-sdk/openai-compatible', '@ai-sdk/openai'].map(installed),
    ]);
    for (const [name, contents] of Object.entries(taskFiles))
      writeFileSync(path.join(project, name), contents);
    const readme = readmeTask(readFileSync(path.join(root, 'README.md'), 'utf8'));
    writeFileSync(path.join(project, 'readme-task.ts'), readme);
    writeFileSync(path.join(project, 'readme-task.mjs'), readme);
    writeFileSync(path.join(project, 'readme-team.yaml'), readmeTeamConfig);
    writeFileSync(path.join(project, 'team.yaml'), teamConfig);
    writeFileSync(path.join(project, 'client.mjs'), clientScript);
    summary = JSON.parse(
      teamtr(
        'train',
        '-c',
        'team.yaml',
        '--task-module',
        'task.ts',
        '--run-dir',
        'runs/sums',
        '--json',
      ),
    ) as Summary;
  },
  { timeout: 600_000 },
);

/** `teamtr serve` in the project until `use` is done with its base URL. */
async function serving<T>(args: string[], use: (baseURL: string) => Promise<T>): Promise<T> {
  // Its own process group: npx runs the server as a grandchild, which a signal to npx alone
  // would leave serving (and this test waiting) after npx exits.
  const child = spawn('npx', ['teamtr', 'serve', ...args, '--port', '0'], {
    cwd: project,
    env: environment,
    detached: true,
  });
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    const baseURL = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk;
        const found = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(output);
        if (found) resolve(found[1]!);
      });
      void exited.then((code) => reject(new Error(`teamtr serve exited with ${code}: ${errors}`)));
    });
    return await use(baseURL);
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

describe('a new user’s first day, in a fresh npm init -y project', () => {
  test('the task in TypeScript (CommonJS project) trains to a visible gain', () => {
    assert.deepEqual(summary.warnings, []);
    assert.equal(summary.evalAfter.count, 300);
    assert.ok(
      summary.evalAfter.accuracy >= summary.evalBefore.accuracy + 0.04,
      `held-out accuracy ${summary.evalBefore.accuracy} → ${summary.evalAfter.accuracy}`,
    );
    const config = JSON.parse(
      readFileSync(path.join(project, 'runs', 'sums', 'config.json'), 'utf8'),
    ) as {
      provenance: { teamtrVersion: string; task: { source: string; path: string; sha256: string } };
    };
    assert.equal(config.provenance.task.source, 'module');
    assert.equal(config.provenance.task.path, path.join(project, 'task.ts'));
  });

  test("the README's task in code, word for word, trains as task.ts and as task.mjs", () => {
    const trained = (file: string) => {
      const result = JSON.parse(
        teamtr(
          'train',
          '-c',
          'readme-team.yaml',
          '--task-module',
          file,
          '--run-dir',
          `runs/${file}`,
          '--json',
        ),
      ) as Summary;
      assert.equal(result.stages, 1);
      const records = readFileSync(path.join(project, 'runs', file, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; elapsedSeconds?: number })
        .filter((record) => record.type !== 'eval')
        .map(({ elapsedSeconds: _elapsed, ...record }) => record);
      assert.ok(records.length > 0, `${file}: no stage records`);
      return records;
    };
    assert.deepEqual(trained('readme-task.mjs'), trained('readme-task.ts'));
  });

  test(
    'served with teamtr serve RUN --task-module, it answers openai and the ai SDK',
    { timeout: 180_000 },
    async () => {
      const result = await serving(
        ['runs/sums', '--task-module', 'task.ts'],
        async (baseURL) =>
          JSON.parse(
            (
              await runAsync(process.execPath, ['client.mjs', baseURL, '7+5|+1|-1', '9+9|+3|-1'], {
                cwd: project,
                env: environment,
              })
            ).stdout,
          ) as {
            chat: { content: string; finish: string };
            stream: string[];
            pairs: string[][];
            logprobs: Array<{ token: string; logprob: number }>;
            compatible: string;
            responses: string;
            responsesStream: string[];
          },
      );
      assert.match(result.chat.content, /^\d+$/);
      assert.equal(result.chat.finish, 'stop');
      assert.ok(result.stream.length > 1, `streamed in ${result.stream.length} content chunk(s)`);
      assert.equal(
        result.stream.join(''),
        result.chat.content,
        'the same seed streams the same answer',
      );
      assert.ok(
        result.pairs.some(([first, second]) => first !== second),
        'n = 2 samples two answers',
      );
      assert.ok(result.logprobs.length >= result.chat.content.length);
      assert.ok(result.logprobs.every((entry) => entry.logprob <= 0 && entry.logprob > -50));
      assert.equal(result.compatible, result.chat.content);
      assert.match(result.responses, /^\d+$/);
      assert.ok(result.responsesStream.join('').length > 0);
    },
  );

  test('the agents export, and teamtr samples shows what they wrote', () => {
    const exported = JSON.parse(
      teamtr(
        'export',
        'runs/sums',
        '--task-module',
        'task.ts',
        '--agent',
        'solver',
        '--out',
        'exported',
        '--json',
      ),
    ) as { out: string };
    assert.ok(existsSync(path.resolve(project, exported.out, 'config.json')), exported.out);
    const samples = teamtr('samples', 'runs/sums', '--n', '2');
    assert.equal(
      (samples.match(/^stage \d+ · problem \S+ · episode \d+ · reward /gm) ?? []).length,
      2,
      samples,
    );
    assert.match(samples, /turn 0 solver — \d+ tokens?, ended by (stop|turn limit)/);
  });
});
