import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { writeJsonAtomic } from '../../io/atomic.js';
import { compareShapes, TensorSetMismatchError } from '../../io/expect-shapes.js';
import { readJsonFile } from '../../io/json-file.js';
import type { NamedArray } from '../../util/named-array.js';
import { readSafetensors, readSafetensorsHeader, writeSafetensors } from '../../io/safetensors.js';
import type { SafetensorsDtype } from '../../io/safetensors-header.js';
import { loraLayers } from '../../nn/lora.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { FileFormatError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { gatherRule, scatterRule, weightLayout, type WeightRule } from './weight-rules.js';

/**
 * Reading and writing the weights of a Hugging Face model directory: `model.safetensors`, or
 * shards listed by `model.safetensors.index.json`. Loading reads one tensor at a time (a
 * partial read of its shard) straight into the model's parameters, so it never holds more
 * than the model plus one tensor in memory. A frozen model whose matrices are kept in bfloat16
 * is converted tensor by tensor as it loads, so it never exists in float32 as a whole.
 */

export const weightFiles = {
  single: 'model.safetensors',
  index: 'model.safetensors.index.json',
} as const;

const indexSchema = z.looseObject({
  metadata: z.record(z.string(), z.unknown()).optional(),
  weight_map: z.record(z.string(), z.string().min(1)),
});

/** Every tensor of a checkpoint: its file and shape (from the headers only). */
export interface WeightCatalog {
  files: string[];
  tensors: Map<string, CatalogEntry>;
}

export interface CatalogEntry {
  file: string;
  shape: number[];
  /** How the file stores it (reads convert to float32). */
  dtype: SafetensorsDtype;
}

export async function readWeightCatalog(directory: string): Promise<WeightCatalog> {
  const single = path.join(directory, weightFiles.single);
  const indexPath = path.join(directory, weightFiles.index);
  if (existsSync(indexPath)) return readShardedCatalog(directory, indexPath);
  if (existsSync(single)) {
    const header = await readSafetensorsHeader(single);
    const tensors = new Map(
      [...header.tensors].map(([name, entry]) => [
        name,
        { file: single, shape: entry.shape, dtype: entry.dtype },
      ]),
    );
    return { files: [single], tensors };
  }
  const hint = existsSync(path.join(directory, 'pytorch_model.bin'))
    ? ' (only PyTorch pickle weights, pytorch_model.bin, are present; teamtr reads safetensors only: convert them with `transformers` save_pretrained(..., safe_serialization=True))'
    : '';
  throw new FileFormatError(directory, `no ${weightFiles.single} or ${weightFiles.index}${hint}`);
}

async function readShardedCatalog(directory: string, indexPath: string): Promise<WeightCatalog> {
  const index = parseWithSchema(indexSchema, await readJsonFile(indexPath), indexPath);
  const shardNames = [...new Set(Object.values(index.weight_map))].sort();
  const tensors = new Map<string, CatalogEntry>();
  const files: string[] = [];
  for (const shardName of shardNames) {
    const file = path.join(directory, shardName);
    if (path.dirname(path.resolve(file)) !== path.resolve(directory)) {
      throw new FileFormatError(
        indexPath,
        `shard ${JSON.stringify(shardName)} is not a file name inside the model directory`,
      );
    }
    if (!existsSync(file))
      throw new FileFormatError(indexPath, `lists shard ${shardName}, which does not exist`);
    files.push(file);
    const header = await readSafetensorsHeader(file);
    for (const [name, entry] of header.tensors) {
      if (index.weight_map[name] === shardName)
        tensors.set(name, { file, shape: entry.shape, dtype: entry.dtype });
    }
  }
  const absent = Object.entries(index.weight_map).filter(([name]) => !tensors.has(name));
  if (absent.length > 0) {
    const listed = absent
      .slice(0, 5)
      .map(([name, shard]) => `${name} (in ${shard})`)
      .join(', ');
    throw new FileFormatError(
      indexPath,
      `${absent.length} tensor(s) listed in weight_map are not in their shard: ${listed}`,
    );
  }
  return { files, tensors };
}

/**
 * Whether a load keeps the frozen matrices in bfloat16: `bfloat16` always, `auto` when the file
 * stores every matrix in BF16 (so keeping them loses nothing), `float32` never.
 */
export type MatricesDtype = 'float32' | 'bfloat16' | 'auto';

/**
 * Fills `model` from the directory's weights. Every missing, unexpected or misshapen tensor is
 * named in one error before anything is read. With `matrices` resolving to bfloat16 the model
 * is frozen and each matrix is rounded to bfloat16 (exact for a BF16 file) right after it is
 * read, so only one tensor exists in float32 at a time.
 */
export async function loadHuggingFaceWeights(
  model: TransformerLM,
  directory: string,
  matrices: MatricesDtype = 'float32',
): Promise<void> {
  const catalog = await readWeightCatalog(directory);
  const layout = weightLayout(model.config, new Set(catalog.tensors.keys()));
  const expected = new Map(layout.rules.map((rule) => [rule.source, rule.sourceShape]));
  const present = new Map([...catalog.tensors].filter(([name]) => !layout.isIgnorable(name)));
  const comparison = compareShapes(present, expected);
  if (comparison.missing.length + comparison.unexpected.length + comparison.misshapen.length > 0) {
    throw new TensorSetMismatchError(directory, comparison);
  }
  // Tensors, not their arrays: a matrix converted to bfloat16 must leave its float32 array
  // unreferenced, or every one of them would stay resident until the load ends.
  const parameters = new Map(model.namedParameters().map(({ name, tensor }) => [name, tensor]));
  // Every parameter must come from the file: the model's initial values are not meaningful.
  const covered = new Set(layout.rules.flatMap((rule) => rule.targets));
  const uncovered = [...parameters.keys()].filter((name) => !covered.has(name));
  if (uncovered.length > 0)
    throw new Error(`the weight rules leave parameters unset: ${uncovered.join(', ')}`);
  const tensorOf = (name: string) => {
    const tensor = parameters.get(name);
    if (!tensor) throw new Error(`weight rule names unknown parameter ${name}`);
    return tensor;
  };
  const toBfloat16 =
    matrices === 'bfloat16' ||
    (matrices === 'auto' &&
      layout.rules.every(
        (rule) =>
          rule.sourceShape.length !== 2 || catalog.tensors.get(rule.source)!.dtype === 'BF16',
      ));
  if (toBfloat16) model.setTrainable(false);
  for (const rule of layout.rules) {
    const { file } = catalog.tensors.get(rule.source)!;
    const contents = await readSafetensors(file, { names: [rule.source] });
    scatterRule(rule, contents.tensors.get(rule.source)!.data, (name) => tensorOf(name).data);
    if (!toBfloat16) continue;
    for (const name of rule.targets) {
      const tensor = tensorOf(name);
      if (tensor.rank === 2) tensor.storeAsBfloat16();
    }
  }
}

/**
 * Writes `model`'s weights with Hugging Face names (F32), LoRA adapters merged in. Above
 * `maxShardBytes` they are split into `model-0000i-of-0000n.safetensors` shards with an
 * index, as `save_pretrained` does.
 */
export async function saveHuggingFaceWeights(
  model: TransformerLM,
  directory: string,
  options: { maxShardBytes?: number } = {},
): Promise<string[]> {
  const layout = weightLayout(model.config);
  const parameters = new Map(
    model.namedParameters().map(({ name, tensor }) => [name, tensor.data]),
  );
  // LoRA adapters are written merged (W + s·B·A), leaving the model itself untouched.
  for (const [modulePath, adapter] of loraLayers(model)) {
    if (adapter.merged) continue;
    const merged = adapter.base.weight.data.slice();
    const delta = adapter.delta();
    for (let index = 0; index < merged.length; index++) merged[index]! += delta[index]!;
    parameters.set(`${modulePath}.weight`, merged);
  }
  const sourceOf = (name: string): Float32Array => parameters.get(name)!;
  const shards = packShards(layout.rules, options.maxShardBytes ?? 2 * 1024 ** 3);
  const metadata = { format: 'pt' };
  if (shards.length === 1) {
    await writeSafetensors(
      path.join(directory, weightFiles.single),
      shards[0]!.map((rule) => hfArray(rule, sourceOf)),
      metadata,
    );
    return [weightFiles.single];
  }
  const names = shards.map(
    (_shard, index) =>
      `model-${String(index + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`,
  );
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  for (const [index, shard] of shards.entries()) {
    // One shard's tensors at a time: exporting needs at most one extra shard in memory.
    await writeSafetensors(
      path.join(directory, names[index]!),
      shard.map((rule) => hfArray(rule, sourceOf)),
      metadata,
    );
    for (const rule of shard) {
      weightMap[rule.source] = names[index]!;
      totalSize += 4 * rule.sourceShape.reduce((product, dimension) => product * dimension, 1);
    }
  }
  await writeJsonAtomic(path.join(directory, weightFiles.index), {
    metadata: { total_size: totalSize },
    weight_map: weightMap,
  });
  return [...names, weightFiles.index];
}

function hfArray(rule: WeightRule, sourceOf: (name: string) => Float32Array): NamedArray {
  return { name: rule.source, shape: [...rule.sourceShape], data: gatherRule(rule, sourceOf) };
}

function packShards(rules: readonly WeightRule[], maxShardBytes: number): WeightRule[][] {
  const shards: WeightRule[][] = [[]];
  let bytes = 0;
  for (const rule of rules) {
    const size = 4 * rule.sourceShape.reduce((product, dimension) => product * dimension, 1);
    if (bytes > 0 && bytes + size > maxShardBytes) {
      shards.push([]);
      bytes = 0;
    }
    shards.at(-1)!.push(rule);
    bytes += size;
  }
  return shards;
}
