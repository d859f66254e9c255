// Size of one agent's part of a run checkpoint (checkpoint/units/<name>/): a LoRA agent saved
// as its PEFT adapter (the default), the same agent with its base weights (checkpointBaseWeights),
// and the agent trained in full. Also times the save and the resume-side restore (which hashes
// the base weights to check them).
//
//   node --import tsx scripts/lora-checkpoint-size.mjs [--models builtin,smollm2] [--rank 8]
//     [--targets queryProjection,valueProjection] [--out <dir>]
//
// `builtin` is builtin:arithmetic-chain/role-0; `smollm2` random weights with SmolLM2-135M's
// shape (src/bench/real-model.ts). Sizes depend on shapes only, so no training is needed: the
// optimizer takes one step on a random batch so its state is what a trained agent saves.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { smolLM2Shape } from '../src/bench/real-model.ts';
import { loadModel } from '../src/models/load.ts';
import { attachLora, loraConfigSchema } from '../src/models/lora-config.ts';
import { TransformerLM } from '../src/nn/transformer.ts';
import { AdamW, decayExempt } from '../src/optim/adamw.ts';
import { crossEntropy, tidy } from '../src/tensor/index.ts';
import { CharTokenizer } from '../src/tokenizer/char.ts';
import { restoreUnitCheckpoint, saveUnitCheckpoint } from '../src/trainer/update/local/unit-checkpoint.ts';
import { RandomGenerator } from '../src/util/random.ts';

const { values: options } = parseArgs({
  options: {
    models: { type: 'string', default: 'builtin,smollm2' },
    rank: { type: 'string', default: '8' },
    targets: { type: 'string', default: 'queryProjection,valueProjection' },
    out: { type: 'string' },
  },
});
const out = options.out ?? mkdtempSync(path.join(os.tmpdir(), 'teamtr-lora-size-'));
const lora = loraConfigSchema.parse({
  rank: Number(options.rank),
  targetModules: options.targets.split(','),
});

function bytesOf(directory) {
  return readdirSync(directory, { withFileTypes: true }).reduce((total, entry) => {
    const full = path.join(directory, entry.name);
    return total + (entry.isDirectory() ? bytesOf(full) : statSync(full).size);
  }, 0);
}

async function baseModel(name) {
  if (name === 'builtin') {
    const loaded = await loadModel('builtin:arithmetic-chain/role-0');
    return { model: loaded.model, tokenizer: loaded.tokenizer, source: loaded.source };
  }
  const model = new TransformerLM(smolLM2Shape, new RandomGenerator(0));
  return { model, tokenizer: new CharTokenizer(), source: null };
}

/** A unit as buildTeam makes it, after one optimizer step on random tokens. */
function unitFor(name, base) {
  const optimizer = new AdamW(base.model.trainableParameters(), {
    learningRate: 1e-4,
    beta1: 0.9,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0,
    noDecay: decayExempt,
  });
  const random = new RandomGenerator(1);
  const length = 16;
  const ids = Int32Array.from({ length: length + 1 }, () =>
    random.nextInt(base.tokenizer.vocabSize),
  );
  tidy(() =>
    crossEntropy(
      base.model.forward({ ids: ids.subarray(0, length), batch: 1, length }),
      ids.subarray(1),
    ).backward(),
  );
  optimizer.update();
  return {
    name,
    model: base.model,
    optimizer,
    agentIndices: [0],
    delta: 0.01,
    learningRate: 1e-4,
    source: base.source ?? undefined,
  };
}

async function measure(label, unit, tokenizer, baseWeights) {
  const directory = path.join(out, `${unit.name}-${label}`);
  const started = process.hrtime.bigint();
  await saveUnitCheckpoint(directory, unit, { tokenizer: tokenizer.toJSON(), baseWeights });
  const saveSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const restoreStarted = process.hrtime.bigint();
  await restoreUnitCheckpoint(directory, unit);
  const restoreSeconds = Number(process.hrtime.bigint() - restoreStarted) / 1e9;
  const bytes = bytesOf(directory);
  rmSync(directory, { recursive: true, force: true });
  return { label, bytes, saveSeconds, restoreSeconds };
}

const rows = [];
for (const name of options.models.split(',')) {
  const full = await baseModel(name);
  const parameters = full.model.parameterCount();
  const fullUnit = unitFor(name, full);
  const fullResult = await measure('full', fullUnit, full.tokenizer, false);
  full.model.destroy();
  const adapted = await baseModel(name);
  await attachLora(adapted.model, lora, new RandomGenerator(2));
  const adapterParameters = adapted.model
    .trainableParameters()
    .reduce((total, entry) => total + entry.tensor.size, 0);
  const loraUnit = unitFor(name, adapted);
  const results = [
    await measure('lora-adapter', loraUnit, adapted.tokenizer, false),
    await measure('lora-with-base', loraUnit, adapted.tokenizer, true),
    fullResult,
  ];
  adapted.model.destroy();
  for (const result of results)
    rows.push({ model: name, parameters, adapterParameters, ...result });
  process.stderr.write(`${name}: ${JSON.stringify(results)}\n`);
}
const size = (bytes) =>
  bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
const what = {
  'lora-adapter': 'LoRA, adapter only (default)',
  'lora-with-base': 'LoRA + base weights (checkpointBaseWeights)',
  full: 'full fine-tuning',
};
process.stdout.write(
  `LoRA rank ${lora.rank} on ${lora.targetModules.join(', ')}; one unit's checkpoint directory\n\n` +
    '| model | parameters (adapter) | checkpoint | size | save | restore |\n|---|---|---|---|---|---|\n' +
    rows
      .map(
        (row) =>
          `| ${row.model} | ${row.parameters.toLocaleString('en')} (${row.adapterParameters.toLocaleString('en')}) | ${what[row.label]} | ${size(row.bytes)} | ${row.saveSeconds.toFixed(2)} s | ${row.restoreSeconds.toFixed(2)} s |`,
      )
      .join('\n') +
    '\n',
);
if (!options.out) rmSync(out, { recursive: true, force: true });
