import { z } from 'zod';
import { loraLayers } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { ConfigError } from '../util/errors.js';
import { parseOr } from '../util/schema.js';

/**
 * How a model's frozen weights are stored. `bfloat16` keeps every frozen matrix (a LoRA agent's
 * base, a frozen agent's or a served model's weights) in half the bytes: batch-1 decoding reads
 * every weight once per token, so it runs about twice as fast (`teamtr bench --real-model`), at
 * the cost of rounding each weight to 8 significant bits (logits move by about 1% of their rms
 * on random models; see nn/bfloat16.test.ts). Products still accumulate in float32, trainable
 * parameters (LoRA adapters) and vectors (norms, biases) stay float32, and sampled and scored
 * log-probabilities come from the same kernels. A fully trained model cannot use it.
 */
export const weightsDtypeSchema = z.enum(['float32', 'bfloat16', 'auto']);
/** `auto`: bfloat16 exactly when that loses nothing (see `holdsBfloat16Values`), else float32. */
export type WeightsDtype = z.output<typeof weightsDtypeSchema>;

/**
 * Whether every matrix of `model` holds bfloat16 values (the low 16 bits of each float32 are
 * zero): true for a checkpoint stored in BF16, or saved from a model kept in bfloat16, whose
 * weights then go back into bfloat16 without any rounding.
 */
export function holdsBfloat16Values(model: TransformerLM): boolean {
  return model.namedParameters().every(({ tensor }) => {
    if (tensor.rank !== 2 || tensor.bfloat16) return true;
    const data = tensor.data;
    const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
    for (let index = 0; index < bits.length; index++)
      if ((bits[index]! & 0xffff) !== 0) return false;
    return true;
  });
}

/**
 * Stores `model`'s frozen matrices in `dtype` (float32, the default when undefined: nothing to do). `trainsFully` is true for
 * a model whose every weight trains (no LoRA), which bfloat16 cannot hold: refused, naming
 * `where` (the setting) and what to do instead. A frozen model's parameters are frozen first.
 */
export function applyWeightsDtype(
  model: TransformerLM,
  dtype: WeightsDtype | undefined,
  options: { trainsFully: boolean; where: string },
): void {
  if (dtype === undefined || dtype === 'float32') return;
  if (dtype === 'auto' && (options.trainsFully || !holdsBfloat16Values(model))) return;
  if (options.trainsFully) {
    throw new ConfigError(
      options.where,
      'bfloat16 holds frozen weights only and this agent trains all of its weights: add "lora" (the base then stays frozen in bfloat16), set "trainable": false, or use "float32"',
    );
  }
  // A LoRA model's base is frozen already (its adapters train); any other model is frozen here.
  if (loraLayers(model).size === 0) model.setTrainable(false);
  model.storeFrozenWeightsAsBfloat16();
}

/** A `--weights-dtype` flag's value (undefined: auto); anything else lists the choices. */
export function parseWeightsDtype(value: unknown, flag = '--weights-dtype'): WeightsDtype {
  if (value === undefined) return 'auto';
  return parseOr(
    weightsDtypeSchema,
    value,
    () =>
      new ConfigError(
        flag,
        `${JSON.stringify(value)} is not a weights dtype (valid: ${weightsDtypeSchema.options.join(', ')})`,
      ),
  );
}
