import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import { RemotePolicy } from '../../team/remote-policy.js';
import { RandomGenerator } from '../../util/random.js';

const mainModule = fileURLToPath(new URL('../main.ts', import.meta.url));
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-cli-serve-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('teamtr serve --model: a real server process that a remote agent can play against, stopped by SIGTERM', async () => {
  const modelDirectory = path.join(root, 'tiny-qwen');
  writeHuggingFaceFixture(modelDirectory, { modelType: 'qwen2' });
  const script =
    `const { main } = await import(${JSON.stringify(pathToFileURL(mainModule).href)});` +
    'process.exitCode = await main(JSON.parse(process.env.TEAMTR_TEST_ARGV));';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: {
      ...process.env,
      TEAMTR_QUIET_BACKEND: '1',
      TEAMTR_TEST_ARGV: JSON.stringify(['serve', '--model', modelDirectory, '--port', '0']),
    },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk;
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1) \(models: tiny-qwen\)/.exec(
          stdout,
        );
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
    });
    const models = (await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> };
    assert.deepEqual(
      models.data.map((entry) => entry.id),
      ['tiny-qwen'],
    );
    const remote = new RemotePolicy({ baseURL: url, model: 'tiny-qwen', api: 'chat' });
    const [turn] = await remote.complete(
      [{ input: 'the sum of 12 and 3?', random: new RandomGenerator(1) }],
      { maxNewTokens: 6, temperature: 0.7 },
    );
    assert.ok(!turn!.text.includes('\n'));
    assert.ok(['stop', 'length'].includes(turn!.finishReason));
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, stderr);
});
