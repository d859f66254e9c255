import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { replaceDirectoryAtomic, writeJsonAtomic } from '../io/atomic.js';
import { readJsonObjectFile } from '../io/json-file.js';
import type { NamedArray } from '../util/named-array.js';
import { readSafetensors, writeSafetensors } from '../io/safetensors.js';
import { attachLoraAt, loraLayers, type LoraLinear } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { FileFormatError } from '../util/errors.js';
import { assertFiniteParameters, assertForwardFinite } from './weight-checks.js';
import { RandomGenerator } from '../util/random.js';
import { parseWithSchema } from '../util/schema.js';
import {
  linearModuleMappings,
  targetModuleName,
  type LinearModuleMapping,
} from './huggingface/modules.js';

/**
 * LoRA adapters in PEFT's layout, which PEFT and vLLM load: `adapter_config.json` plus
 * `adapter_model.safetensors` with keys such as
 * `base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight` (A [rank, in], B [out, rank]).
 *
 * GPT-2's fused `c_attn` holds the query, key and value projections, which the engine adapts
 * separately. Saving stacks their A matrices (rank = the sum of their ranks) and places each B
 * in its own block of rows and columns, which is exactly the sum of the three adapters;
 * `rank_pattern`/`alpha_pattern` record the fused rank. Loading gives each projection the full
 * A and its rows of B, which again computes exactly the saved adapter.
 */

export const peftFiles = {
  config: 'adapter_config.json',
  weights: 'adapter_model.safetensors',
} as const;

const keyPrefix = 'base_model.model.';

export const adapterConfigSchema = z.looseObject({
  peft_type: z.literal('LORA'),
  r: z.number().int().positive(),
  lora_alpha: z.number().positive(),
  rank_pattern: z.record(z.string(), z.number().int().positive()).nullable().default({}),
  alpha_pattern: z.record(z.string(), z.number().positive()).nullable().default({}),
  use_rslora: z.boolean().default(false),
  use_dora: z.literal(false).optional(),
  bias: z.literal('none').default('none'),
  modules_to_save: z.array(z.string()).max(0).nullable().optional(),
  layers_to_transform: z.null().optional(),
});

interface ModuleAdapter {
  mapping: LinearModuleMapping;
  rank: number;
  alpha: number;
  a: NamedArray;
  b: NamedArray;
}

/**
 * PEFT reads pattern keys as regular expressions matching the end of a module path after a
 * dot (`(.*\.)?(key)$`); the first matching key wins.
 */
export function patternValue<T>(
  patterns: Record<string, T> | null,
  modulePath: string,
): T | undefined {
  for (const [key, value] of Object.entries(patterns ?? {})) {
    let matches: boolean;
    try {
      matches = new RegExp(`^(.*\\.)?(${key})$`).test(modulePath);
    } catch {
      matches = modulePath === key || modulePath.endsWith(`.${key}`);
    }
    if (matches) return value;
  }
  return undefined;
}

/**
 * Pattern keys for modules whose (rank, alpha) differ from the defaults: the short target
 * name (`c_attn`) when every module of that name agrees, else the module path without its
 * first component with dots escaped (`h\.0\.attn\.c_attn`), which PEFT matches exactly.
 */
function patternKeys(
  modules: readonly ModuleAdapter[],
  mappings: readonly LinearModuleMapping[],
  value: (module: ModuleAdapter) => number,
  fallback: number,
): Record<string, number> {
  const byName = new Map<string, ModuleAdapter[]>();
  for (const module of modules) {
    const name = targetModuleName(module.mapping, mappings);
    byName.set(name, [...(byName.get(name) ?? []), module]);
  }
  const pattern: Record<string, number> = {};
  for (const [name, group] of byName) {
    const values = new Set(group.map(value));
    if (values.size === 1) {
      if (value(group[0]!) !== fallback) pattern[name] = value(group[0]!);
      continue;
    }
    for (const module of group) {
      if (value(module) === fallback) continue;
      const path = module.mapping.hfModule;
      pattern[path.slice(path.indexOf('.') + 1).replaceAll('.', '\\.')] = value(module);
    }
  }
  return pattern;
}

/** One Hugging Face module's adapter from the engine adapters on its parts (fused when several). */
function fuseAdapters(
  mapping: LinearModuleMapping,
  parts: Array<LoraLinear | undefined>,
): ModuleAdapter | null {
  const present = parts.filter((part): part is LoraLinear => part !== undefined);
  if (present.length === 0) return null;
  const reference = present[0]!;
  const rank = present.reduce((total, part) => total + part.rank, 0);
  // Keep the reference adapter's scaling s for the fused one; fold other scalings into B.
  const alpha = reference.rankStabilized
    ? reference.scaling * Math.sqrt(rank)
    : reference.scaling * rank;
  const inFeatures = reference.inFeatures;
  const outPerPart = reference.outFeatures;
  const a = new Float32Array(rank * inFeatures);
  const b = new Float32Array(parts.length * outPerPart * rank);
  let column = 0;
  parts.forEach((part, index) => {
    if (!part) return;
    a.set(part.loraA.data, column * inFeatures);
    const ratio = part.scaling / reference.scaling;
    for (let row = 0; row < outPerPart; row++) {
      for (let inner = 0; inner < part.rank; inner++) {
        b[(index * outPerPart + row) * rank + column + inner] =
          ratio * part.loraB.data[row * part.rank + inner]!;
      }
    }
    column += part.rank;
  });
  const name = `${keyPrefix}${mapping.hfModule}`;
  return {
    mapping,
    rank,
    alpha,
    a: { name: `${name}.lora_A.weight`, shape: [rank, inFeatures], data: a },
    b: { name: `${name}.lora_B.weight`, shape: [parts.length * outPerPart, rank], data: b },
  };
}

/**
 * adapter_config.json: the most common (rank, alpha) becomes r / lora_alpha (ties go to the
 * smaller rank); modules that differ (GPT-2's fused c_attn) are listed in the patterns.
 */
function adapterConfig(
  modules: readonly ModuleAdapter[],
  mappings: readonly LinearModuleMapping[],
  options: { baseModel: string | null; rankStabilized: boolean; fanInFanOut: boolean },
): Record<string, unknown> {
  const counts = new Map<string, { count: number; rank: number; alpha: number }>();
  for (const { rank, alpha } of modules) {
    const key = `${rank}/${alpha}`;
    counts.set(key, { count: (counts.get(key)?.count ?? 0) + 1, rank, alpha });
  }
  const ranked = [...counts.values()].sort(
    (left, right) => right.count - left.count || left.rank - right.rank,
  );
  const { rank: defaultRank, alpha: defaultAlpha } = ranked[0]!;
  const rankPattern = patternKeys(modules, mappings, (module) => module.rank, defaultRank);
  const alphaPattern = patternKeys(modules, mappings, (module) => module.alpha, defaultAlpha);
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: options.baseModel,
    revision: null,
    r: defaultRank,
    lora_alpha: defaultAlpha,
    rank_pattern: rankPattern,
    alpha_pattern: alphaPattern,
    target_modules: [
      ...new Set(modules.map((module) => targetModuleName(module.mapping, mappings))),
    ].sort(),
    lora_dropout: 0,
    bias: 'none',
    fan_in_fan_out: options.fanInFanOut,
    use_rslora: options.rankStabilized,
    use_dora: false,
    init_lora_weights: true,
    inference_mode: true,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
  };
}

export interface SavePeftOptions {
  /** Written as base_model_name_or_path (a Hub id or a directory). */
  baseModel?: string;
}

/** Writes the model's adapters as a PEFT adapter directory (atomically). */
export async function savePeftAdapter(
  model: TransformerLM,
  directory: string,
  options: SavePeftOptions = {},
): Promise<void> {
  const adapters = loraLayers(model);
  if (adapters.size === 0)
    throw new FileFormatError(directory, 'the model has no LoRA adapters to save');
  const mappings = linearModuleMappings(model.config);
  const modules = mappings.flatMap((mapping) => {
    const fused = fuseAdapters(
      mapping,
      mapping.ourModules.map((module) => adapters.get(module)),
    );
    return fused ? [fused] : [];
  });
  const rankStabilized = [...adapters.values()][0]!.rankStabilized;
  const config = adapterConfig(modules, mappings, {
    baseModel: options.baseModel ?? null,
    rankStabilized,
    fanInFanOut: model.config.architecture === 'gpt2',
  });
  await replaceDirectoryAtomic(directory, async (temporary) => {
    await writeJsonAtomic(path.join(temporary, peftFiles.config), config);
    await writeSafetensors(
      path.join(temporary, peftFiles.weights),
      modules.flatMap((module) => [module.a, module.b]),
      { format: 'pt' },
    );
  });
}

/**
 * Loads a PEFT adapter directory onto a base model: freezes the base, attaches an adapter per
 * listed module with the saved values. Every tensor must name a module of this model with the
 * right shape; anything else is an error naming it.
 */
export async function loadPeftAdapter(
  model: TransformerLM,
  directory: string,
): Promise<Map<string, LoraLinear>> {
  const { config, pairs } = await readPeftAdapter(model, directory);
  model.setTrainable(false);
  const attached = new Map<string, LoraLinear>();
  for (const { mapping, a, b } of pairs) {
    const rank = a.shape[0]!;
    const alpha = patternValue(config.alpha_pattern, mapping.hfModule) ?? config.lora_alpha;
    mapping.ourModules.forEach((modulePath, part) => {
      const adapter = attachLoraAt(
        model,
        modulePath,
        { rank, alpha, rankStabilized: config.use_rslora },
        new RandomGenerator(0),
      );
      const rows = adapter.outFeatures;
      adapter.loraA.data.set(a.data);
      adapter.loraB.data.set(b.data.subarray(part * rows * rank, (part + 1) * rows * rank));
      attached.set(modulePath, adapter);
    });
  }
  assertFiniteParameters(model, directory);
  assertForwardFinite(model, directory);
  return attached;
}

/** adapter_config.json and the A/B pairs of an adapter directory, checked against the model's layers. */
export async function readPeftAdapter(
  model: TransformerLM,
  directory: string,
): Promise<{
  config: z.output<typeof adapterConfigSchema>;
  pairs: ReturnType<typeof pairTensors>;
}> {
  const configPath = path.join(directory, peftFiles.config);
  const weightsPath = path.join(directory, peftFiles.weights);
  if (!existsSync(configPath))
    throw new FileFormatError(directory, `not a PEFT adapter directory (no ${peftFiles.config})`);
  const config = parseWithSchema(
    adapterConfigSchema,
    await readJsonObjectFile(configPath),
    configPath,
  );
  if (!existsSync(weightsPath)) {
    const hint = existsSync(path.join(directory, 'adapter_model.bin'))
      ? ' (only adapter_model.bin is present; teamtr reads safetensors only)'
      : '';
    throw new FileFormatError(directory, `no ${peftFiles.weights}${hint}`);
  }
  const tensors = (await readSafetensors(weightsPath)).tensors;
  const pairs = pairTensors(tensors, linearModuleMappings(model.config), weightsPath);
  checkPairs(pairs, model, config, weightsPath);
  return { config, pairs };
}

/** Every pair must fit its layer and the configured rank; all problems are named together. */
function checkPairs(
  pairs: ReturnType<typeof pairTensors>,
  model: TransformerLM,
  config: z.output<typeof adapterConfigSchema>,
  weightsPath: string,
): void {
  const shapes = new Map(model.namedParameters().map(({ name, tensor }) => [name, tensor.shape]));
  const problems = pairs.flatMap(({ mapping, a, b }) => {
    const [out, input] = shapes.get(`${mapping.ourModules[0]}.weight`)! as [number, number];
    const rank = a.shape[0]!;
    const expectedRank = patternValue(config.rank_pattern, mapping.hfModule) ?? config.r;
    if (rank !== expectedRank)
      return [
        `${mapping.hfModule}: lora_A has rank ${rank} but adapter_config.json says ${expectedRank}`,
      ];
    const fits =
      a.shape.length === 2 &&
      a.shape[1] === input &&
      b.shape.length === 2 &&
      b.shape[0] === out * mapping.ourModules.length &&
      b.shape[1] === rank;
    return fits
      ? []
      : [
          `${mapping.hfModule}: lora_A [${a.shape.join(', ')}] and lora_B [${b.shape.join(', ')}] do not fit the layer (expected [${rank}, ${input}] and [${out * mapping.ourModules.length}, ${rank}])`,
        ];
  });
  if (problems.length > 0)
    throw new FileFormatError(weightsPath, `cannot load the adapter:\n  ${problems.join('\n  ')}`);
}

export function pairTensors(
  tensors: Map<string, { shape: number[]; data: Float32Array }>,
  mappings: readonly LinearModuleMapping[],
  source: string,
): Array<{ mapping: LinearModuleMapping; a: NamedArray; b: NamedArray }> {
  const byModule = new Map(mappings.map((mapping) => [mapping.hfModule, mapping]));
  const found = new Map<string, { a?: NamedArray; b?: NamedArray }>();
  const problems: string[] = [];
  for (const [name, tensor] of tensors) {
    const match = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/.exec(name);
    if (!match) {
      problems.push(
        `"${name}" is not a LoRA A/B weight (expected ${keyPrefix}<module>.lora_A.weight)`,
      );
      continue;
    }
    const [, module, which] = match as unknown as [string, string, 'A' | 'B'];
    if (!byModule.has(module)) {
      problems.push(
        `"${name}" targets ${module}, which this model does not have as a linear layer`,
      );
      continue;
    }
    const entry = found.get(module) ?? {};
    entry[which === 'A' ? 'a' : 'b'] = { name, shape: tensor.shape, data: tensor.data };
    found.set(module, entry);
  }
  for (const [module, entry] of found) {
    if (!entry.a || !entry.b)
      problems.push(`${module} has lora_${entry.a ? 'B' : 'A'}.weight missing`);
  }
  if (problems.length > 0)
    throw new FileFormatError(source, `cannot load the adapter:\n  ${problems.join('\n  ')}`);
  if (found.size === 0) throw new FileFormatError(source, 'the adapter has no tensors');
  return [...found].map(([module, entry]) => ({
    mapping: byModule.get(module)!,
    a: entry.a!,
    b: entry.b!,
  }));
}
