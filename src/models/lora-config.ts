import { z } from 'zod';
import { applyLora, type LoraLinear } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { ConfigError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { engineNamesFor, linearModuleMappings } from './huggingface/modules.js';
import { loadPeftAdapter } from './peft.js';
import { resolveModelSpec } from './load.js';

/**
 * Per-agent LoRA in a team config (`agents[i].lora`): train low-rank adapters instead of the
 * whole model. Target modules take the engine's names (`queryProjection`) or the Hugging Face
 * / PEFT ones (`q_proj`, GPT-2's `c_attn`, `c_proj` for both projections named so).
 */
export const loraConfigSchema = z.strictObject({
  rank: z.number().int().positive().default(8),
  /** Adapter scale numerator: updates are multiplied by alpha / rank. @default 2 × rank */
  alpha: z.number().positive().optional(),
  /** @default ["queryProjection", "valueProjection"] (PEFT's default for Llama-family models) */
  targetModules: z.array(z.string().min(1)).min(1).default(['queryProjection', 'valueProjection']),
  /** rsLoRA: scale by alpha / √rank. */
  rankStabilized: z.boolean().default(false),
  /** Start from this saved PEFT adapter directory (its own rank and targets) instead of fresh adapters. */
  adapter: z.string().min(1).optional(),
});

export type LoraConfig = z.output<typeof loraConfigSchema>;
export type LoraConfigInput = z.input<typeof loraConfigSchema>;

/** Engine module names for the configured targets; unknown names list the valid ones. */
export function resolveTargetModules(
  model: TransformerLM,
  targets: readonly string[],
  where = 'lora.targetModules',
): string[] {
  const mappings = linearModuleMappings(model.config);
  const engineNames = new Set(
    mappings.flatMap((mapping) => mapping.ourModules.map((module) => module.split('.').at(-1)!)),
  );
  const resolved = new Set<string>();
  targets.forEach((target, index) => {
    const names = engineNames.has(target) ? [target] : engineNamesFor(target, mappings);
    if (names.length === 0) {
      const hfNames = [...new Set(mappings.map((mapping) => mapping.typeName.split('.').at(-1)!))];
      throw new ConfigError(
        `${where}[${index}]`,
        `"${target}" is not a linear layer of this ${model.config.architecture} model (valid: ${[...engineNames].sort().join(', ')}; or ${hfNames.sort().join(', ')})`,
      );
    }
    for (const name of names) resolved.add(name);
  });
  return [...resolved];
}

/**
 * Puts LoRA adapters on a loaded model per `config` (fresh, or from `config.adapter`) and
 * freezes everything else: `model.trainableParameters()` then lists only the adapters.
 */
export async function attachLora(
  model: TransformerLM,
  config: LoraConfig,
  random: RandomGenerator,
): Promise<Map<string, LoraLinear>> {
  if (config.adapter !== undefined) return loadPeftAdapter(model, resolveModelSpec(config.adapter));
  return applyLora(model, {
    rank: config.rank,
    alpha: config.alpha ?? 2 * config.rank,
    rankStabilized: config.rankStabilized,
    targetModules: resolveTargetModules(model, config.targetModules),
    random,
  });
}
