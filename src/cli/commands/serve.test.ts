import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import { RemotePolicy } from '../../team/remote-policy.js';
import { RandomGenerator } from '../../util/random.js';
import { runCli } from '../test-support/run-cli.js';
import { startServeProcess } from '../test-support/serve-process.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-cli-serve-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** `teamtr serve …` in a child process, once it listens: its URL, its stderr, and how to stop it. */
async function startServe(argv: string[]) {
  const server = await startServeProcess(
    argv,
    /listening on (http:\/\/127\.0\.0\.1:\d+\/v1) \(models: ([^)]*)\)/,
  );
  return { ...server, url: server.match[1]!, models: server.match[2]! };
}

test('teamtr serve --model: a real server process that a remote agent can play against, stopped by SIGTERM', async () => {
  const modelDirectory = path.join(root, 'tiny-qwen');
  writeHuggingFaceFixture(modelDirectory, { modelType: 'qwen2' });
  const server = await startServe(['serve', '--model', modelDirectory, '--port', '0']);
  try {
    assert.equal(server.models, 'tiny-qwen');
    const models = (await (await fetch(`${server.url}/models`)).json()) as {
      data: Array<{ id: string }>;
    };
    assert.deepEqual(
      models.data.map((entry) => entry.id),
      ['tiny-qwen'],
    );
    const remote = new RemotePolicy({ baseURL: server.url, model: 'tiny-qwen', api: 'chat' });
    const [turn] = await remote.complete(
      [{ input: 'the sum of 12 and 3?', random: new RandomGenerator(1) }],
      { maxNewTokens: 6, temperature: 0.7 },
    );
    assert.ok(!turn!.text.includes('\n'));
    assert.ok(['stop', 'length'].includes(turn!.finishReason));
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
  }
});

test('serving a run that has no checkpoint yet warns that its agents are the base models', async () => {
  const runDirectory = path.join(root, 'run');
  const trained = await runCli([
    'train',
    '-c',
    'configs/demo.yaml',
    '--run-dir',
    runDirectory,
    '--budget-max-stages',
    '1',
    '--rollout-problems-per-batch',
    '2',
    '--rollout-group-size',
    '2',
    '--evaluation-problems',
    '4',
  ]);
  assert.equal(trained.code, 0, trained.stderr);
  const withCheckpoint = await startServe(['serve', runDirectory, '--port', '0']);
  assert.equal(await withCheckpoint.stop(), 0);
  assert.doesNotMatch(withCheckpoint.stderr(), /no checkpoint/);

  // A run before its first checkpoint: no checkpoint, and no summary either.
  rmSync(path.join(runDirectory, 'checkpoint'), { recursive: true });
  rmSync(path.join(runDirectory, 'summary.json'));
  const untrained = await startServe(['serve', runDirectory, '--port', '0']);
  assert.match(untrained.models, /team/);
  assert.equal(await untrained.stop(), 0, untrained.stderr());
  assert.match(
    untrained.stderr(),
    /warning: .*run has no checkpoint yet, so its agents are the untrained base models/,
  );
});

test('serve --tinker honours --max-body-bytes and --weights-dtype, logs each request, and --quiet silences it', async () => {
  const modelDirectory = path.join(root, 'tiny-qwen-tinker');
  writeHuggingFaceFixture(modelDirectory, { modelType: 'qwen2' });
  const ready = /Tinker API on (http:\/\/127\.0\.0\.1:\d+)/;
  const flags = ['--tinker', '--model', modelDirectory, '--port', '0', '--max-body-bytes', '200'];
  const server = await startServeProcess(['serve', ...flags, '--weights-dtype', 'bfloat16'], ready);
  const url = server.match[1]!;
  const post = (body: string) =>
    fetch(`${url}/api/v1/create_session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
  try {
    assert.equal((await post(JSON.stringify({ tags: [], sdk_version: '0.25.0' }))).status, 200);
    const large = JSON.stringify({ tags: ['x'.repeat(300)], sdk_version: '0.25.0' });
    assert.equal((await post(large)).status, 413);
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
  }
  assert.match(server.stderr(), /POST \/api\/v1\/create_session 200 \d+ ms/);
  assert.match(server.stderr(), /POST \/api\/v1\/create_session 413 \d+ ms — .*limit is 200/);
  const quiet = await startServeProcess(['serve', ...flags, '--quiet'], ready);
  try {
    await fetch(`${quiet.match[1]!}/api/v1/healthz`);
  } finally {
    assert.equal(await quiet.stop(), 0, quiet.stderr());
  }
  assert.doesNotMatch(quiet.stderr(), /GET \/api\/v1\/healthz/);
});
