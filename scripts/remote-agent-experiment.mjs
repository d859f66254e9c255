// Training local agents to coordinate with a frozen remote one (issue #6).
//
//   node --import tsx scripts/remote-agent-experiment.mjs [--seeds 0,1,2] [--remote-role 1]
//     [--stages 150] [--eval-problems 1000] [--arms remote,local-frozen] [--out <dir>]
//
// The built-in arithmetic-chain team (builtin:arithmetic-chain/role-*), with the agent of
// --remote-role played by the project's own OpenAI-compatible server: the role's built-in model
// is served on 127.0.0.1 exactly as `teamtr serve --model DIR` serves it, and the team config
// gives that agent an `endpoint` instead of a `model`. The other agents are trained with TeamTR
// for --stages stages. (Stages, not generated tokens, are the budget here, so that both arms
// make the same updates whatever the server reports as its token usage.)
// Arm `remote` plays the frozen agent over HTTP; arm `local-frozen` loads the same model locally
// with `trainable: false`, a control that should reach similar accuracies (the two sample with
// different random streams, so they agree in distribution, not bit for bit).
// Held-out team accuracy (temperature 1, as the README's demo) before and after training, per
// seed and arm: <out>/results.jsonl and a table on stdout.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../src/models/load.ts';
import { modelEndpoint } from '../src/serve/endpoints.ts';
import { startServer } from '../src/serve/server.ts';
import { clearPool } from '../src/tensor/index.ts';
import { train } from '../src/trainer/trainer.ts';

const { values: options } = parseArgs({
  options: {
    seeds: { type: 'string', default: '0,1,2' },
    'remote-role': { type: 'string', default: '1' },
    stages: { type: 'string', default: '150' },
    'eval-problems': { type: 'string', default: '1000' },
    arms: { type: 'string', default: 'remote,local-frozen' },
    out: { type: 'string', default: 'runs/remote-agent-experiment' },
  },
});
const seeds = options.seeds.split(',').map(Number);
const remoteRole = Number(options['remote-role']);
const arms = options.arms.split(',');
const out = path.resolve(options.out);
mkdirSync(out, { recursive: true });
const log = (text) => process.stderr.write(`${text}\n`);
const roles = [0, 1, 2];
const agentName = (role) => `segment-${role + 1}`; // the built-in team's agent names

const served = await loadModel(`builtin:arithmetic-chain/role-${remoteRole}`);
const inner = modelEndpoint({
  id: `role-${remoteRole}`,
  model: served.model,
  tokenizer: served.tokenizer,
  generation: served.generation,
});
const counter = { requests: 0 };
const server = await startServer({
  port: 0,
  endpoints: [
    {
      id: inner.id,
      complete: (request, events) => (counter.requests++, inner.complete(request, events)),
    },
  ],
});
log(`serving builtin:arithmetic-chain/role-${remoteRole} at ${server.url}/v1 as "${inner.id}"`);

function teamAgents(arm) {
  return roles.map((role) => {
    const name = agentName(role);
    if (role !== remoteRole) return { name, model: `builtin:arithmetic-chain/role-${role}` };
    if (arm === 'local-frozen')
      return { name, model: `builtin:arithmetic-chain/role-${role}`, trainable: false };
    return { name, endpoint: { baseURL: `${server.url}/v1`, model: inner.id } };
  });
}

function config(seed, arm) {
  return {
    seed,
    task: { name: 'arithmetic-chain', difficulty: 2, roles: 3 },
    agents: teamAgents(arm),
    schedule: 'teamtr',
    rollout: { problemsPerBatch: 16, groupSize: 8 },
    optimizer: { learningRate: 1e-4 },
    budget: { generatedTokens: 1e9, maxStages: Number(options.stages) },
    evaluation: { problems: Number(options['eval-problems']), every: 100000, temperature: 1 },
    checkpointEvery: 25,
  };
}

function readRecords(runDirectory) {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

const results = [];
for (const seed of seeds) {
  for (const arm of arms) {
    const runDirectory = path.join(out, `seed${seed}-${arm}`);
    rmSync(runDirectory, { recursive: true, force: true });
    const requestsBefore = counter.requests;
    log(
      `seed ${seed}, ${arm}: training ${roles
        .filter((role) => role !== remoteRole)
        .map(agentName)
        .join(' and ')} ...`,
    );
    const summary = await train({ config: config(seed, arm), runDirectory });
    clearPool(); // one process runs many trainings: keep the buffer pool from filling up
    const records = readRecords(runDirectory);
    const updates = records.filter((record) => record.type === 'update');
    const result = {
      seed,
      arm,
      before: summary.evalBefore.accuracy,
      after: summary.evalAfter.accuracy,
      stages: summary.stages,
      updates: summary.updates,
      generatedTokens: summary.generatedTokens,
      updatedAgents: [...new Set(updates.map((record) => record.agent))].sort(),
      outOfRegion: updates.filter((record) => !record.inRegion).length,
      meanKl: updates.reduce((total, record) => total + record.kl, 0) / updates.length,
      remoteRequests: counter.requests - requestsBefore,
      wallSeconds: summary.wallSeconds,
    };
    results.push(result);
    log(`  ${JSON.stringify(result)}`);
  }
}
await server.close();
writeFileSync(
  path.join(out, 'results.jsonl'),
  results.map((result) => JSON.stringify(result)).join('\n') + '\n',
);

const percent = (value) => `${(100 * value).toFixed(1)}%`;
const rows = results.map(
  (result) =>
    `| ${result.seed} | ${result.arm} | ${percent(result.before)} | ${percent(result.after)} | **${((result.after - result.before) * 100).toFixed(1)}** | ${result.updates} (${result.updatedAgents.join(', ')}) | ${result.outOfRegion} | ${result.meanKl.toFixed(4)} | ${result.generatedTokens} | ${result.remoteRequests} | ${Math.round(result.wallSeconds)} s |`,
);
process.stdout.write(
  `${agentName(remoteRole)} frozen (role-${remoteRole}), ${options.stages} TeamTR stages, held-out accuracy on ${options['eval-problems']} problems at temperature 1\n\n` +
    '| seed | arm | before | after | gain (points) | updates (agents) | out of region | mean KL | generated tokens | remote requests | wall |\n' +
    `|${'---|'.repeat(11)}\n${rows.join('\n')}\n`,
);
