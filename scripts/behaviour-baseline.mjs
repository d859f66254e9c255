// Captures what a suite of short training runs writes, so that a change meant to keep behaviour
// (a refactor) can be checked against the code before it: every metrics.jsonl record with its
// wall-clock fields removed, and the SHA-256 of every checkpoint file (a Tinker agent's weights
// are hashed where the local service keeps them). Runs from the sources (tsx):
//
//   node --import tsx scripts/behaviour-baseline.mjs capture <out.json> [--only demo,lora,...]
//   node --import tsx scripts/behaviour-baseline.mjs compare <before.json> <after.json>
//
// The suite covers every schedule, suffix resampling, both back-offs (undo and line search),
// LoRA, bfloat16 base weights, a swap with alignment, adaptive δ, stage rollback, a chat-template
// team, an agent trained on a local Tinker service (`teamtr serve --tinker`) and a run interrupted
// and resumed, plus the whole demo (configs/demo.yaml, seed 0; about 3 minutes of the ~4 the
// suite takes on one core). `capture` also prints, per run, which of those features it exercised.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { writeHuggingFaceFixture } from '../src/models/test-support/huggingface-fixture.ts';
import { train } from '../src/index.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const log = (text) => process.stderr.write(`${text}\n`);
/** Record fields that measure wall-clock time, not behaviour. */
const wallClockFields = new Set(['elapsedSeconds']);

const builtin = (role) => `builtin:arithmetic-chain/${role}`;
const small = {
  seed: 0,
  task: { name: 'arithmetic-chain', difficulty: 2, roles: 3 },
  rollout: { problemsPerBatch: 4, groupSize: 4 },
  trustRegion: { delta: 0.01, epochs: 2, minibatches: 2 },
  optimizer: { learningRate: 1e-3 },
  budget: { generatedTokens: 1_000_000, maxStages: 3 },
  evaluation: { problems: 20, every: 2 },
  checkpointEvery: 1,
};
const agents = (extra = () => ({})) =>
  [0, 1, 2].map((role) => ({
    name: `segment-${role + 1}`,
    model: builtin(`role-${role}`),
    ...extra(role),
  }));
const withSmall = (overrides) => ({
  ...small,
  ...overrides,
  trustRegion: { ...small.trustRegion, ...overrides.trustRegion },
});

/** name → (scratch directory, service URL) → config. */
const suite = {
  demo: () => parseYaml(readFileSync(path.join(root, 'configs', 'demo.yaml'), 'utf8')),
  'teamtr-restore': () =>
    withSmall({
      rollout: { ...small.rollout, suffixResampling: false },
      trustRegion: { backoff: 'restore', delta: 0.002 },
      optimizer: { learningRate: 1e-2 },
    }),
  'line-search': () =>
    withSmall({
      trustRegion: { backoff: 'line-search', delta: 0.002 },
      optimizer: { learningRate: 3e-3 },
    }),
  'sequential-stale': () => withSmall({ schedule: 'sequential-stale' }),
  joint: () => withSmall({ schedule: 'joint', updateOrder: 'fixed' }),
  single: () => withSmall({ schedule: 'single' }),
  lora: () =>
    withSmall({
      updateOrder: 'random',
      agents: agents(() => ({ lora: { rank: 2 } })),
      optimizer: { learningRate: 1e-2 },
    }),
  bfloat16: () =>
    withSmall({
      agents: agents(() => ({ lora: { rank: 2 }, weightsDtype: 'bfloat16' })),
      optimizer: { learningRate: 1e-2 },
    }),
  swap: () =>
    withSmall({
      swaps: [{ stage: 2, agent: 'segment-2', model: builtin('role-0'), alignment: { steps: 2 } }],
    }),
  'adaptive-delta': () =>
    withSmall({ trustRegion: { adaptiveDelta: {} }, certificate: { heldOutProblems: 4 } }),
  rollback: () =>
    withSmall({
      trustRegion: { rollback: { confidence: 0.1 }, delta: 0.05 },
      optimizer: { learningRate: 1e-2 },
      certificate: { heldOutProblems: 4 },
      budget: { generatedTokens: 1_000_000, maxStages: 4 },
    }),
  'chat-team': (scratch) => chatTeamConfig(scratch),
  // Interrupted after stage 2 and resumed (resumeRuns): ends as an uninterrupted run would.
  resume: () =>
    withSmall({ checkpointEvery: 2, budget: { generatedTokens: 1_000_000, maxStages: 4 } }),
  tinker: (_scratch, serviceURL) =>
    withSmall({
      trustRegion: { delta: 0.003, epochs: 3, minibatches: 2 },
      agents: agents((role) =>
        role < 2
          ? {}
          : {
              model: undefined,
              learningRate: 1e-2,
              engine: {
                tinker: {
                  baseURL: serviceURL,
                  baseModel: 'role-2',
                  tokenizer: builtin('role-2'),
                  lora: { rank: 2, seed: 7 },
                },
              },
            },
      ).map((agent) => JSON.parse(JSON.stringify(agent))),
    }),
};

/** Two tiny random Qwen2 checkpoints with a ChatML template on a GSM8K-format file. */
function chatTeamConfig(scratch) {
  const longContext = {
    modelType: 'qwen2',
    editConfig: (config) => ({ ...config, max_position_embeddings: 256 }),
  };
  const roles = [
    { name: 'solver', prompt: 'Solve the problem step by step.' },
    { name: 'finalizer', prompt: 'Write the final answer after ####.' },
  ];
  for (const role of roles) writeHuggingFaceFixture(path.join(scratch, role.name), longContext);
  const file = path.join(scratch, 'gsm8k.jsonl');
  const lines = Array.from({ length: 12 }, (_unused, index) =>
    JSON.stringify({
      question: `Sam has ${index} apples and gets 2 more.\nHow many now?`,
      answer: `${index} + 2 = ${index + 2}\n#### ${index + 2}`,
      split: index >= 9 ? 'eval' : 'train',
    }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return {
    task: { name: 'jsonl', path: file, verifier: 'math', roles, maxTurnChars: 40 },
    agents: roles.map((role) => ({ name: role.name, model: path.join(scratch, role.name) })),
    protocol: { maxTurnTokens: 10 },
    rollout: { problemsPerBatch: 2, groupSize: 4 },
    optimizer: { learningRate: 1e-3 },
    budget: { generatedTokens: 1_000_000, maxStages: 2 },
    evaluation: { problems: 3, every: 2 },
    checkpointEvery: 1,
  };
}

function filesUnder(directory) {
  return readdirSync(directory)
    .sort()
    .flatMap((name) => {
      const full = path.join(directory, name);
      return statSync(full).isDirectory() ? filesUnder(full) : [full];
    });
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** A Tinker weights file's arrays (after its JSON header, which names a random path). */
function weightsBodyHash(stateDirectory, weightsPath) {
  for (const file of filesUnder(stateDirectory).filter((name) => name.endsWith('.weights'))) {
    const bytes = readFileSync(file);
    const headerLength = bytes.readUInt32LE(0);
    const header = JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8'));
    if (header.path === weightsPath) return sha256(bytes.subarray(4 + headerLength));
  }
  return null;
}

/**
 * state.json without wall-clock time, the length of metrics.jsonl (which holds elapsed seconds)
 * and the checksums of files hashed here anyway (metrics.jsonl with its clock).
 */
function comparableState(state) {
  const comparable = { ...state };
  for (const key of ['elapsedSeconds', 'metricsBytes', 'integrity']) delete comparable[key];
  return comparable;
}

/** What a run wrote that behaviour determines, with wall-clock fields and random names removed. */
function digestRun(runDirectory, stateDirectory) {
  const metrics = readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) =>
      Object.fromEntries(
        Object.entries(JSON.parse(line)).filter(([key]) => !wallClockFields.has(key)),
      ),
    );
  const checkpoint = {};
  const checkpointDirectory = path.join(runDirectory, 'checkpoint');
  for (const file of filesUnder(checkpointDirectory)) {
    const name = path.relative(checkpointDirectory, file);
    if (name === 'state.json') {
      checkpoint[name] = comparableState(JSON.parse(readFileSync(file, 'utf8')));
    } else if (name.endsWith('tinker.json')) {
      const saved = JSON.parse(readFileSync(file, 'utf8'));
      checkpoint[name] = {
        baseModel: saved.baseModel,
        weightsSha256: stateDirectory ? weightsBodyHash(stateDirectory, saved.weightsPath) : null,
      };
    } else if (name.endsWith('.json')) {
      // A LoRA unit names its base model by path: the checkout's, wherever it is.
      checkpoint[name] = sha256(readFileSync(file, 'utf8').replaceAll(root, '<package>'));
    } else checkpoint[name] = sha256(readFileSync(file));
  }
  return { metrics, checkpoint };
}

/** Which features of the suite a run's records show it used. */
function exercised(digest) {
  const updates = digest.metrics.filter((record) => record.type === 'update');
  const types = new Set(digest.metrics.map((record) => record.type));
  const deltas = new Set(updates.map((record) => record.delta));
  return {
    updates: updates.length,
    stepsUndone: updates.filter((record) => record.stepsUndone > 0).length,
    lineSearchKept: updates.filter((record) => record.lastStepScale > 0 && record.lastStepScale < 1)
      .length,
    suffixResampled: updates.filter((record) => record.resampledFromTurn > 0).length,
    klEstimated: updates.filter((record) => record.klEstimated).length,
    distinctDeltas: deltas.size,
    swaps: types.has('swap'),
    rollbacks: digest.metrics.filter((record) => record.type === 'rollback').length,
  };
}

/** `teamtr serve --tinker` on a built-in model, in a child process; resolves with its URL. */
async function startTinkerService(stateDirectory) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const { main } = await import(${JSON.stringify(path.join(root, 'src/cli/main.ts'))});
       process.exitCode = await main(process.argv.slice(1));`,
      'serve',
      '--tinker',
      '--model',
      builtin('role-2'),
      '--name',
      'role-2',
      '--port',
      '0',
      '--state-dir',
      stateDirectory,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Its request log is left out; what it says before it dies is not.
  let errors = '';
  child.stderr.on('data', (chunk) => (errors = (errors + chunk).slice(-4000)));
  const url = await new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /baseURL (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) =>
      reject(new Error(`teamtr serve --tinker exited (${code}): ${errors}`)),
    );
  });
  return { url, stop: () => child.kill('SIGINT') };
}

/** Trains until stage `stage` ends, then resumes the run to its end. */
async function interruptedAtStage(stage, config, runDirectory) {
  const controller = new AbortController();
  const stopped = await train({
    config,
    runDirectory,
    signal: controller.signal,
    onProgress: (event) => {
      if (event.kind === 'stage' && event.stage === stage) controller.abort();
    },
  });
  if (!stopped.interrupted) throw new Error('the resume run was not interrupted');
  await train({ config: {}, runDirectory, resume: true });
}

async function captureRun(name) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), `teamtr-baseline-${name}-`));
  const stateDirectory = name === 'tinker' ? path.join(scratch, 'service-state') : null;
  const service = stateDirectory ? await startTinkerService(stateDirectory) : null;
  const previousKey = process.env.TINKER_API_KEY;
  process.env.TINKER_API_KEY ??= 'tml-baseline-local';
  try {
    const runDirectory = path.join(scratch, 'run');
    const config = suite[name](scratch, service?.url);
    if (name === 'resume') await interruptedAtStage(2, config, runDirectory);
    else await train({ config, runDirectory });
    return digestRun(runDirectory, stateDirectory);
  } finally {
    service?.stop();
    if (previousKey === undefined) delete process.env.TINKER_API_KEY;
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function capture(out, only) {
  const names = only ? only.split(',') : Object.keys(suite);
  const unknown = names.filter((name) => !(name in suite));
  if (unknown.length > 0)
    throw new Error(`unknown run ${unknown.join(', ')} (runs: ${Object.keys(suite).join(', ')})`);
  const runs = {};
  for (const name of names) {
    const started = Date.now();
    runs[name] = await captureRun(name);
    log(
      `${name}: ${((Date.now() - started) / 1000).toFixed(1)} s ${JSON.stringify(exercised(runs[name]))}`,
    );
  }
  writeFileSync(out, `${JSON.stringify({ runs }, null, 1)}\n`);
  log(`wrote ${out}`);
}

/** The differences between two captures, one line each (empty: identical). */
function differences(before, after) {
  const found = [];
  for (const name of Object.keys(before.runs)) {
    const a = before.runs[name];
    const b = after.runs[name];
    if (!b) {
      found.push(`${name}: missing from the second capture`);
      continue;
    }
    if (a.metrics.length !== b.metrics.length)
      found.push(`${name}: ${a.metrics.length} vs ${b.metrics.length} metrics records`);
    a.metrics.forEach((record, index) => {
      const other = b.metrics[index];
      if (!other) return;
      for (const key of new Set([...Object.keys(record), ...Object.keys(other)]))
        if (JSON.stringify(record[key]) !== JSON.stringify(other[key]))
          found.push(
            `${name}: record ${index} (${record.type}) ${key}: ${JSON.stringify(record[key])} vs ${JSON.stringify(other[key])}`,
          );
    });
    const comparable = (checkpoint, file) =>
      JSON.stringify(file === 'state.json' ? comparableState(checkpoint[file]) : checkpoint[file]);
    for (const file of new Set([...Object.keys(a.checkpoint), ...Object.keys(b.checkpoint)]))
      if (comparable(a.checkpoint, file) !== comparable(b.checkpoint, file))
        found.push(`${name}: checkpoint/${file} differs`);
  }
  return found;
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { only: { type: 'string' } },
});
const [command, first, second] = positionals;
if (command === 'capture' && first) await capture(first, values.only);
else if (command === 'compare' && first && second) {
  const found = differences(
    JSON.parse(readFileSync(first, 'utf8')),
    JSON.parse(readFileSync(second, 'utf8')),
  );
  for (const line of found.slice(0, 50)) log(line);
  log(found.length === 0 ? 'identical' : `${found.length} differences`);
  process.exitCode = found.length === 0 ? 0 : 1;
} else {
  log(
    'usage: behaviour-baseline.mjs capture <out.json> [--only a,b] | compare <before.json> <after.json>',
  );
  process.exitCode = 2;
}
