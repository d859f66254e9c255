// Swap shock and recovery with and without stage-0 alignment (docs/method.md §6, issue #7).
//
//   node --import tsx scripts/swap-experiment.mjs [--seeds 0,1,2] [--pre-stages 6]
//     [--post-stages 15] [--align-steps 200] [--align-epochs 2] [--align-learning-rate 1e-3]
//     [--arms control,none,sft,kl] [--role 2] [--incoming <model dir>] [--out <dir>]
//
// Per seed: a TeamTR run of the built-in arithmetic-chain team (builtin:arithmetic-chain/role-*)
// is interrupted after --pre-stages stages; its directory is copied once per arm; each copy
// gets the same swap scheduled exactly as `teamtr swap RUN --agent A --model M --align-steps N
// --align-mode MODE` does (scheduleSwap), and is resumed for --post-stages stages. The swap
// record gives the rewards just before, right after and after alignment (paired batches); the
// swap-recovery record gives the stages to recover. Arm `control` resumes without a swap, `none`
// swaps without alignment, `sft`/`kl`/`sft+kl` align for --align-steps first. Without --incoming, a different finalizer is
// pretrained first (smaller, fewer steps, mistake rate 0.5) into <out>/incoming.
// Results: <out>/results.jsonl (one line per seed and arm) and a table on stdout.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pretrain } from '../src/pretrain/pretrain.ts';
import { clearPool } from '../src/tensor/index.ts';
import { scheduleSwap } from '../src/trainer/swap/swap-plan.ts';
import { train } from '../src/trainer/trainer.ts';

const { values: options } = parseArgs({
  options: {
    seeds: { type: 'string', default: '0,1,2' },
    'pre-stages': { type: 'string', default: '6' },
    'post-stages': { type: 'string', default: '15' },
    'align-steps': { type: 'string', default: '200' },
    'align-epochs': { type: 'string', default: '2' },
    'align-learning-rate': { type: 'string', default: '1e-3' },
    arms: { type: 'string', default: 'control,none,sft,kl' },
    role: { type: 'string', default: '2' },
    incoming: { type: 'string' },
    out: { type: 'string', default: 'runs/swap-experiment' },
  },
});
const seeds = options.seeds.split(',').map(Number);
const preStages = Number(options['pre-stages']);
const postStages = Number(options['post-stages']);
const alignSteps = Number(options['align-steps']);
const arms = options.arms.split(',');
const role = Number(options.role);
const agent = `segment-${role + 1}`; // the built-in team's agent names (arithmetic-chain roles)
const out = path.resolve(options.out);
mkdirSync(out, { recursive: true });
const log = (text) => process.stderr.write(`${text}\n`);

async function incomingModel() {
  if (options.incoming) return path.resolve(options.incoming);
  const directory = path.join(out, 'incoming');
  const model = path.join(directory, `role-${role}`);
  if (existsSync(model)) return model;
  log(`pretraining the incoming models into ${directory} ...`);
  await pretrain({
    seed: 7, steps: 500, mistakeRate: 0.5,
    model: { architecture: 'llama', vocabSize: 100, hiddenSize: 48, layers: 2, heads: 4, kvHeads: 2, intermediateSize: 128, maxPositions: 96, tieEmbeddings: true },
  }, directory);
  return model;
}

function baseConfig(seed) {
  return {
    seed,
    task: { name: 'arithmetic-chain' },
    rollout: { problemsPerBatch: 16, groupSize: 8 },
    budget: { generatedTokens: 10_000_000, maxStages: preStages + postStages },
    evaluation: { problems: 100, every: 1000 },
    checkpointEvery: preStages,
  };
}

function readRecords(runDirectory) {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
}

async function runArm(seed, arm, base, model) {
  const runDirectory = path.join(out, `seed${seed}-${arm}`);
  rmSync(runDirectory, { recursive: true, force: true });
  cpSync(base, runDirectory, { recursive: true });
  const alignment = arm === 'none' ? { steps: 0 } : { steps: alignSteps, mode: arm, epochs: Number(options['align-epochs']), learningRate: Number(options['align-learning-rate']) };
  if (arm !== 'control') await scheduleSwap({ runDirectory, agent, model, alignment });
  const started = Date.now();
  await train({ config: {}, runDirectory, resume: true });
  const records = readRecords(runDirectory);
  const swap = records.find((record) => record.type === 'swap') ?? null;
  const recovery = records.find((record) => record.type === 'swap-recovery');
  const after = records.filter((record) => record.type === 'stage' && record.stage > preStages);
  const evaluations = records.filter((record) => record.type === 'eval');
  return {
    seed, arm, swapStage: swap?.stage ?? null,
    rewardBefore: swap?.rewardBefore ?? null, rewardAfterSwap: swap?.rewardAfterSwap ?? null, rewardAfterAlignment: swap?.rewardAfterAlignment ?? null,
    shock: swap?.shock ?? null, shockStandardError: swap?.shockStandardError ?? null,
    alignmentLossFirst: swap?.alignmentLossFirst ?? null, alignmentLossLast: swap?.alignmentLossLast ?? null, swapTokens: swap?.swapTokens ?? 0,
    stagesToRecover: recovery ? recovery.stagesToRecover : null,
    meanStageRewardAfterSwap: after.reduce((total, record) => total + record.rewardAfter, 0) / after.length,
    evalAtStart: evaluations[0].accuracy, evalAtEnd: evaluations[evaluations.length - 1].accuracy,
    wallSeconds: (Date.now() - started) / 1000,
  };
}

function meanStd(values) {
  const finite = values.filter((value) => value !== null && Number.isFinite(value));
  if (finite.length === 0) return 'n/a';
  const mean = finite.reduce((a, b) => a + b, 0) / finite.length;
  const std = finite.length > 1 ? Math.sqrt(finite.reduce((total, value) => total + (value - mean) ** 2, 0) / (finite.length - 1)) : 0;
  return `${mean.toFixed(3)} ± ${std.toFixed(3)}`;
}

const model = await incomingModel();
const results = [];
for (const seed of seeds) {
  const base = path.join(out, `seed${seed}-base`);
  rmSync(base, { recursive: true, force: true });
  const controller = new AbortController();
  log(`seed ${seed}: ${preStages} TeamTR stages before the swap ...`);
  await train({ config: baseConfig(seed), runDirectory: base, signal: controller.signal, onProgress: (event) => { if (event.kind === 'stage' && event.stage === preStages) controller.abort(); } });
  for (const arm of arms) {
    log(`seed ${seed}: swap ${agent} → ${model}, alignment ${arm} ...`);
    const result = await runArm(seed, arm, base, model);
    clearPool(); // one process runs many trainings: keep the buffer pool from filling up
    results.push(result);
    log(`  ${JSON.stringify(result)}`);
  }
}
writeFileSync(path.join(out, 'results.jsonl'), results.map((result) => JSON.stringify(result)).join('\n') + '\n');

const header = '| arm | reward before | right after swap | after alignment | shock (after − before) | stages to recover | recovered | mean stage reward, stages after the swap point | eval accuracy at the end |';
const rows = arms.map((arm) => {
  const of = results.filter((result) => result.arm === arm);
  const get = (key) => of.map((result) => result[key]);
  const recovered = arm === 'control' ? 'n/a' : `${of.filter((result) => result.stagesToRecover !== null).length}/${of.length} within ${postStages}`;
  const name = { control: 'no swap (control)', none: 'swap, no alignment' }[arm] ?? `swap + ${arm}, ${alignSteps} steps`;
  return `| ${name} | ${meanStd(get('rewardBefore'))} | ${meanStd(get('rewardAfterSwap'))} | ${meanStd(get('rewardAfterAlignment'))} | ${meanStd(get('shock'))} | ${meanStd(get('stagesToRecover'))} | ${recovered} | ${meanStd(get('meanStageRewardAfterSwap'))} | ${meanStd(get('evalAtEnd'))} |`;
});
const evalAtStart = meanStd(results.filter((result) => result.arm === arms[0]).map((result) => result.evalAtStart));
process.stdout.write(`Swap of ${agent} for ${model} at stage ${preStages + 1} of ${preStages + postStages}, seeds ${seeds.join(', ')} (mean ± std over seeds; eval accuracy at stage 0: ${evalAtStart})\n\n${header}\n|${'---|'.repeat(9)}\n${rows.join('\n')}\n`);
