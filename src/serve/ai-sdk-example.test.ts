import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Team } from '../team/team.js';
import { modelEndpoint } from './endpoints.js';
import { teamEndpoint } from './team-endpoint.js';
import { startServer, type RunningServer } from './server.js';
import { charModel, charTeam, charTokenizer } from './test-support/char-team.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const example = path.join(root, 'examples', 'ai-sdk.ts');
const team: Team = charTeam(['segment-1', 'segment-2'], ['seg1', 'seg2'], 30);

let server: RunningServer;
before(async () => {
  server = await startServer({
    port: 0,
    maxBodyBytes: 65_536,
    maxConcurrent: 1,
    maxQueued: 4,
    endpoints: [
      modelEndpoint({
        id: 'segment-1',
        model: charModel(30),
        tokenizer: charTokenizer,
        promptFormat: 'plain',
      }),
      teamEndpoint('team', team),
    ],
  });
});
after(() => server.close());

test('the README shows examples/ai-sdk.ts as it is', () => {
  const code = readFileSync(example, 'utf8');
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  assert.ok(readme.includes('```ts\n' + code + '```'), 'README and examples/ai-sdk.ts differ');
});

test('the AI SDK example runs against a live teamtr serve', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', example], {
    cwd: root,
    env: { ...process.env, TEAMTR_URL: `${server.url}/v1` },
    timeout: 60_000,
  });
  // Not trimmed: an empty streamed answer (the example samples unseeded) leaves 'segment-1: '.
  const lines = stdout.split('\n');
  assert.match(lines[0]!, /^team: .* \(\d+ tokens\)$/);
  assert.match(lines[1]!, /^segment-1: /);
});
