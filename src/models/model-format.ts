import type { TransformerLM } from '../nn/transformer.js';
import type { AdamWState } from '../optim/adamw.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { GenerationDefaults } from './huggingface/generation-config.js';

/** A model loaded from a directory in any format (load.ts), with what came with it. */
export interface LoadedModel {
  model: TransformerLM;
  tokenizer: Tokenizer;
  /** The directory it was loaded from. */
  source: string;
  /** Optimizer state saved with it, if any (teamtr checkpoints only). */
  optimizerState: AdamWState | null;
  /** Caller state saved with it (`extra.json`). */
  extra: Record<string, unknown> | null;
  /** Sampling defaults shipped with the model (Hugging Face generation_config.json). */
  generation?: GenerationDefaults | null;
  /** The original config.json of a Hugging Face directory (export keeps its other keys). */
  huggingFaceConfig?: Record<string, unknown> | null;
}

/**
 * One on-disk model format. The loader asks each format in turn whether it recognizes a
 * directory; adding a format (Hugging Face, in its own module) means adding it to the list.
 */
export interface ModelFormat {
  readonly name: string;
  recognizes(directory: string): boolean;
  load(directory: string, options?: ModelLoadOptions): Promise<LoadedModel>;
}

export interface ModelLoadOptions {
  /**
   * For a model that will stay frozen: load its matrices straight into bfloat16 (`bfloat16`;
   * `auto` when the checkpoint stores them so), one tensor at a time, so the model never exists
   * in float32 as a whole. The model then comes back frozen. A format that cannot convert while
   * it loads ignores this (the caller's weights-dtype.ts `applyWeightsDtype` converts after).
   * @default 'float32' (every parameter as loaded, trainable)
   */
  frozenMatrices?: 'float32' | 'bfloat16' | 'auto';
}
