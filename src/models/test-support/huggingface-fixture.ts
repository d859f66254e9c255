import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { NamedArray } from '../../util/named-array.js';
import { encodeSafetensors } from '../../io/safetensors.js';
import { byteLevelBpeFixture } from '../../tokenizer/test-support/byte-level-bpe.js';
import { RandomGenerator } from '../../util/random.js';

/**
 * Tiny random-weight checkpoints in the Hugging Face layout, written the way `save_pretrained`
 * writes them: config.json, safetensors (single or sharded with an index), tokenizer.json +
 * tokenizer_config.json (the byte-level BPE fixture with a ChatML template) and
 * generation_config.json. Tensor names and shapes are listed here independently of the
 * loader's mapping table, so the tests check that table rather than trust it.
 */

export const fixtureModelTypes = ['llama', 'qwen2', 'qwen3', 'mistral', 'gpt2'] as const;
export type FixtureModelType = (typeof fixtureModelTypes)[number];

/** Embedding rows: more than the tokenizer's 289 ids, as Qwen pads its vocabulary. */
const vocabSize = 296;

export function fixtureConfig(modelType: FixtureModelType): Record<string, unknown> {
  const llamaLike = {
    vocab_size: vocabSize,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-5,
    hidden_act: 'silu',
    bos_token_id: 286,
    eos_token_id: 288,
    torch_dtype: 'float32',
    transformers_version: '4.46.0',
  };
  switch (modelType) {
    case 'llama':
      return {
        ...llamaLike,
        architectures: ['LlamaForCausalLM'],
        model_type: 'llama',
        rope_theta: 10000,
        tie_word_embeddings: false,
        attention_bias: false,
        mlp_bias: false,
        rope_scaling: null,
      };
    case 'qwen2':
      return {
        ...llamaLike,
        architectures: ['Qwen2ForCausalLM'],
        model_type: 'qwen2',
        rope_theta: 1000000,
        tie_word_embeddings: true,
        use_sliding_window: false,
        sliding_window: 32,
        max_window_layers: 2,
      };
    case 'qwen3':
      return {
        ...llamaLike,
        architectures: ['Qwen3ForCausalLM'],
        model_type: 'qwen3',
        head_dim: 8,
        rope_theta: 1000000,
        tie_word_embeddings: true,
        attention_bias: false,
        use_sliding_window: false,
      };
    case 'mistral':
      return {
        ...llamaLike,
        architectures: ['MistralForCausalLM'],
        model_type: 'mistral',
        rope_theta: 10000,
        tie_word_embeddings: false,
        sliding_window: 48,
      };
    case 'gpt2':
      return {
        architectures: ['GPT2LMHeadModel'],
        model_type: 'gpt2',
        vocab_size: vocabSize,
        n_embd: 16,
        n_layer: 2,
        n_head: 4,
        n_positions: 64,
        n_ctx: 64,
        n_inner: null,
        layer_norm_epsilon: 1e-5,
        activation_function: 'gelu_new',
        bos_token_id: 286,
        eos_token_id: 286,
        tie_word_embeddings: true,
        torch_dtype: 'float32',
      };
  }
}

/** Every tensor name and shape of a fixture checkpoint, in save order. */
export function fixtureTensorShapes(
  modelType: FixtureModelType,
): Array<{ name: string; shape: number[] }> {
  const config = fixtureConfig(modelType);
  const shapes: Array<{ name: string; shape: number[] }> = [];
  const add = (name: string, shape: number[]) => shapes.push({ name, shape });
  if (modelType === 'gpt2') {
    const width = config.n_embd as number;
    add('transformer.wte.weight', [vocabSize, width]);
    add('transformer.wpe.weight', [config.n_positions as number, width]);
    for (let layer = 0; layer < (config.n_layer as number); layer++) {
      const prefix = `transformer.h.${layer}`;
      add(`${prefix}.ln_1.weight`, [width]);
      add(`${prefix}.ln_1.bias`, [width]);
      add(`${prefix}.attn.c_attn.weight`, [width, 3 * width]);
      add(`${prefix}.attn.c_attn.bias`, [3 * width]);
      add(`${prefix}.attn.c_proj.weight`, [width, width]);
      add(`${prefix}.attn.c_proj.bias`, [width]);
      add(`${prefix}.ln_2.weight`, [width]);
      add(`${prefix}.ln_2.bias`, [width]);
      add(`${prefix}.mlp.c_fc.weight`, [width, 4 * width]);
      add(`${prefix}.mlp.c_fc.bias`, [4 * width]);
      add(`${prefix}.mlp.c_proj.weight`, [4 * width, width]);
      add(`${prefix}.mlp.c_proj.bias`, [width]);
    }
    add('transformer.ln_f.weight', [width]);
    add('transformer.ln_f.bias', [width]);
    return shapes;
  }
  const hidden = config.hidden_size as number;
  const heads = config.num_attention_heads as number;
  const kvHeads = config.num_key_value_heads as number;
  const headDim = (config.head_dim as number | undefined) ?? hidden / heads;
  const intermediate = config.intermediate_size as number;
  add('model.embed_tokens.weight', [vocabSize, hidden]);
  for (let layer = 0; layer < (config.num_hidden_layers as number); layer++) {
    const prefix = `model.layers.${layer}`;
    add(`${prefix}.input_layernorm.weight`, [hidden]);
    add(`${prefix}.self_attn.q_proj.weight`, [heads * headDim, hidden]);
    add(`${prefix}.self_attn.k_proj.weight`, [kvHeads * headDim, hidden]);
    add(`${prefix}.self_attn.v_proj.weight`, [kvHeads * headDim, hidden]);
    if (modelType === 'qwen2') {
      add(`${prefix}.self_attn.q_proj.bias`, [heads * headDim]);
      add(`${prefix}.self_attn.k_proj.bias`, [kvHeads * headDim]);
      add(`${prefix}.self_attn.v_proj.bias`, [kvHeads * headDim]);
    }
    add(`${prefix}.self_attn.o_proj.weight`, [hidden, heads * headDim]);
    if (modelType === 'qwen3') {
      add(`${prefix}.self_attn.q_norm.weight`, [headDim]);
      add(`${prefix}.self_attn.k_norm.weight`, [headDim]);
    }
    add(`${prefix}.post_attention_layernorm.weight`, [hidden]);
    add(`${prefix}.mlp.gate_proj.weight`, [intermediate, hidden]);
    add(`${prefix}.mlp.up_proj.weight`, [intermediate, hidden]);
    add(`${prefix}.mlp.down_proj.weight`, [hidden, intermediate]);
  }
  add('model.norm.weight', [hidden]);
  if (!config.tie_word_embeddings) add('lm_head.weight', [vocabSize, hidden]);
  return shapes;
}

/** Random values: norm gains near 1, biases small, matrices wide enough to give varied logits. */
export function fixtureTensors(modelType: FixtureModelType, seed = 0): NamedArray[] {
  const random = new RandomGenerator(`hf-fixture/${modelType}/${seed}`);
  return fixtureTensorShapes(modelType).map(({ name, shape }) => {
    const size = shape.reduce((product, dimension) => product * dimension, 1);
    const isNorm = /(layernorm|norm|ln_\d|ln_f)\.weight$/.test(name);
    const isBias = name.endsWith('.bias');
    const data = new Float32Array(size);
    for (let index = 0; index < size; index++) {
      data[index] = isNorm
        ? 1 + 0.1 * random.normal()
        : isBias
          ? 0.1 * random.normal()
          : 0.3 * random.normal();
    }
    return { name, shape, data };
  });
}

export interface WriteFixtureOptions {
  modelType: FixtureModelType;
  /** Split the weights over this many shards with model.safetensors.index.json. @default 1 */
  shards?: number;
  seed?: number;
  /** Replace or drop tensors (to build broken checkpoints). */
  editTensors?: (tensors: NamedArray[]) => NamedArray[];
  /** Replace config.json. */
  editConfig?: (config: Record<string, unknown>) => Record<string, unknown>;
  chatTemplate?: boolean;
}

export function writeHuggingFaceFixture(directory: string, options: WriteFixtureOptions): void {
  mkdirSync(directory, { recursive: true });
  const config = fixtureConfig(options.modelType);
  const write = (name: string, value: unknown) =>
    writeFileSync(path.join(directory, name), `${JSON.stringify(value, null, 2)}\n`);
  write('config.json', options.editConfig ? options.editConfig(config) : config);
  let tensors = fixtureTensors(options.modelType, options.seed ?? 0);
  if (options.editTensors) tensors = options.editTensors(tensors);
  const shards = options.shards ?? 1;
  if (shards === 1) {
    writeFileSync(
      path.join(directory, 'model.safetensors'),
      encodeSafetensors(tensors, { format: 'pt' }),
    );
  } else {
    const weightMap: Record<string, string> = {};
    const perShard = Math.ceil(tensors.length / shards);
    for (let shard = 0; shard < shards; shard++) {
      const name = `model-${String(shard + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = tensors.slice(shard * perShard, (shard + 1) * perShard);
      for (const tensor of part) weightMap[tensor.name] = name;
      writeFileSync(path.join(directory, name), encodeSafetensors(part, { format: 'pt' }));
    }
    write('model.safetensors.index.json', {
      metadata: {
        total_size: tensors.reduce((total, tensor) => total + 4 * tensor.data.length, 0),
      },
      weight_map: weightMap,
    });
  }
  const tokenizer = byteLevelBpeFixture({ chatTemplate: options.chatTemplate ?? true });
  write('tokenizer.json', tokenizer.tokenizer);
  write('tokenizer_config.json', tokenizer.config);
  write('generation_config.json', {
    bos_token_id: 286,
    eos_token_id: [288, 286],
    do_sample: true,
    temperature: 0.7,
    top_p: 0.8,
    top_k: 20,
    repetition_penalty: 1.05,
    transformers_version: '4.46.0',
  });
}
