import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { TransformerLM } from '../nn/transformer.js';
import { LocalPolicy } from '../team/policy.js';
import type { Team } from '../team/team.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { RandomGenerator } from '../util/random.js';
import { modelEndpoint, teamEndpoint } from './endpoints.js';
import { startServer, type RunningServer } from './server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const example = path.join(root, 'examples', 'ai-sdk.ts');
const char = new CharTokenizer();
const model = (seed: number) =>
  new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: char.vocabSize,
      hiddenSize: 16,
      layers: 1,
      heads: 2,
      intermediateSize: 24,
      maxPositions: 96,
    },
    new RandomGenerator(seed),
  );
const team: Team = {
  agents: ['segment-1', 'segment-2'].map((name, index) => ({
    name,
    rolePrompt: `seg${index + 1}`,
    speakerTag: `${'AB'[index]}:`,
    policy: new LocalPolicy(model(30 + index), char),
  })),
  protocol: { turnOrder: [0, 1], answerTurn: 1, permutePerEpisode: false, maxTurnTokens: 8 },
};

let server: RunningServer;
before(async () => {
  server = await startServer({
    port: 0,
    maxBodyBytes: 65_536,
    maxConcurrent: 1,
    maxQueued: 4,
    endpoints: [
      modelEndpoint({ id: 'segment-1', model: model(30), tokenizer: char, promptFormat: 'plain' }),
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
  const lines = stdout.trim().split('\n');
  assert.match(lines[0]!, /^team: .* \(\d+ tokens\)$/);
  assert.match(lines[1]!, /^segment-1: /);
});
