import { ShapeError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import {
  add,
  attention,
  embedding,
  gelu,
  isGradientEnabled,
  matmul,
  parameter,
  rope,
  swiglu,
  tidy,
  type Tensor,
} from '../tensor/index.js';
import {
  modelFeatures,
  resolveModelConfig,
  type ModelConfig,
  type ModelConfigInput,
  type ModelFeatures,
} from './config.js';
import type { KeyValueCache } from './kv-cache.js';
import { Linear, normalValues, type LinearLayer } from './linear.js';
import { Module } from './module.js';
import { createNorm, RMSNorm, type Norm, type ResidualStream } from './norms.js';
import { selectRows } from '../tensor/ops/gather.js';

/**
 * Decoder-only language models: the Llama family (RMSNorm, RoPE, SwiGLU, grouped-query
 * attention; Qwen2's QKV bias and Qwen3's QK-norm as options) and GPT-2 (learned positions,
 * LayerNorm, GELU). Classes in dependency order: attention → MLP → block → model (the norms
 * they share are in norms.ts). Activations keep the projection layout [batch, length, features] throughout; heads
 * are a view the kernels understand, so no transposes are ever materialized.
 */

// ---- attention -----------------------------------------------------------------------------

/** What a forward pass needs to know about positions, padding and the cache. */
export interface SequenceLayout {
  batch: number;
  length: number;
  /** [batch·length] absolute positions (RoPE / learned positions). */
  positions: Int32Array;
  /** [batch, keyCapacity] 1 = real token, 0 = padding; null = all real. */
  keyMask: Float32Array | null;
  /** Slot of the first new token: in the cache, or after `keysValues.before` (else 0). */
  queryStart: number;
  /** Keys and values with gradients around the pass's own (see ForwardInput.keysValues). */
  keysValues: LayerKeysValues | null;
}

/**
 * What a pass with gradients does with each layer's keys and values: the ones its queries
 * attend to, given its own [batch, length, kvHeads·headDim] — another pass's `before` slots
 * followed by its own (a prefix computed once for the rows that share it,
 * shared-prefix-gradients.ts) — and it may keep them for a later pass.
 */
export interface LayerKeysValues {
  /** Key slots before the pass's first token: its queries start there. */
  readonly before: number;
  /** Layer `layerIndex`'s keys and values, [batch, before + length, kvHeads·headDim]. */
  attend(layerIndex: number, key: Tensor, value: Tensor): { key: Tensor; value: Tensor };
}

export class SelfAttention extends Module {
  readonly queryProjection: LinearLayer;
  readonly keyProjection: LinearLayer;
  readonly valueProjection: LinearLayer;
  readonly outputProjection: LinearLayer;
  readonly queryNorm: RMSNorm | null;
  readonly keyNorm: RMSNorm | null;

  constructor(
    private readonly config: ModelConfig,
    private readonly features: ModelFeatures,
    random: RandomGenerator,
  ) {
    super();
    const { hiddenSize, heads, kvHeads, headDim } = config;
    const qkvBias = features.queryKeyValueBias;
    const outputBias = features.outputBias;
    const residualStd = 0.02 / Math.sqrt(2 * config.layers);
    this.queryProjection = this.registerModule(
      'queryProjection',
      new Linear(hiddenSize, heads * headDim, { bias: qkvBias, random }),
    );
    this.keyProjection = this.registerModule(
      'keyProjection',
      new Linear(hiddenSize, kvHeads * headDim, { bias: qkvBias, random }),
    );
    this.valueProjection = this.registerModule(
      'valueProjection',
      new Linear(hiddenSize, kvHeads * headDim, { bias: qkvBias, random }),
    );
    this.outputProjection = this.registerModule(
      'outputProjection',
      new Linear(heads * headDim, hiddenSize, { bias: outputBias, random, initStd: residualStd }),
    );
    this.queryNorm = features.queryKeyNorm
      ? this.registerModule('queryNorm', new RMSNorm(headDim, config.normEpsilon))
      : null;
    this.keyNorm = features.queryKeyNorm
      ? this.registerModule('keyNorm', new RMSNorm(headDim, config.normEpsilon))
      : null;
  }

  /** x: [batch, length, hidden] → [batch, length, hidden] */
  forward(
    input: Tensor,
    layout: SequenceLayout,
    cache: KeyValueCache | null,
    layerIndex: number,
  ): Tensor {
    const { heads, kvHeads, ropeTheta } = this.config;
    let query = this.queryProjection.forward(input); // [B, T, H·D]
    let key = this.keyProjection.forward(input); // [B, T, KvH·D]
    const value = this.valueProjection.forward(input); // [B, T, KvH·D]
    if (this.queryNorm && this.keyNorm) {
      query = this.queryNorm.forward(query); // per head (weight [D])
      key = this.keyNorm.forward(key);
    }
    if (this.features.positions === 'rotary') {
      query = rope(query, layout.positions, { heads, theta: ropeTheta });
      key = rope(key, layout.positions, { heads: kvHeads, theta: ropeTheta });
    }
    let keys = key;
    let values = value;
    let keyLength = layout.length;
    if (cache) {
      const stored = cache.append(layerIndex, key, value, layout.queryStart);
      keys = stored.key; // [B, capacity, KvH·D]
      values = stored.value;
      keyLength = layout.queryStart + layout.length;
    } else if (layout.keysValues) {
      const attended = layout.keysValues.attend(layerIndex, key, value);
      keys = attended.key; // [B, before + T, KvH·D]
      values = attended.value;
      keyLength = layout.queryStart + layout.length;
    }
    const mixed = attention(query, keys, values, {
      heads,
      kvHeads,
      queryStart: layout.queryStart,
      keyLength,
      keyMask: layout.keyMask,
    }); // [B, T, H·D]
    return this.outputProjection.forward(mixed);
  }
}

// ---- MLP -----------------------------------------------------------------------------------

export class FeedForward extends Module {
  readonly gateProjection: LinearLayer | null;
  readonly upProjection: LinearLayer;
  readonly downProjection: LinearLayer;

  constructor(
    private readonly config: ModelConfig,
    features: ModelFeatures,
    random: RandomGenerator,
  ) {
    super();
    const { hiddenSize, intermediateSize } = config;
    const bias = features.outputBias;
    const residualStd = 0.02 / Math.sqrt(2 * config.layers);
    this.gateProjection =
      features.feedForward === 'swiglu'
        ? this.registerModule(
            'gateProjection',
            new Linear(hiddenSize, intermediateSize, { bias: false, random }),
          )
        : null;
    this.upProjection = this.registerModule(
      'upProjection',
      new Linear(hiddenSize, intermediateSize, { bias, random }),
    );
    this.downProjection = this.registerModule(
      'downProjection',
      new Linear(intermediateSize, hiddenSize, { bias, random, initStd: residualStd }),
    );
  }

  /** [B, T, hidden] → [B, T, hidden]: SwiGLU (llama) or GELU (gpt2). */
  forward(input: Tensor): Tensor {
    const up = this.upProjection.forward(input); // [B, T, I]
    const activated = this.gateProjection
      ? swiglu(this.gateProjection.forward(input), up)
      : gelu(up);
    return this.downProjection.forward(activated);
  }
}

// ---- block ---------------------------------------------------------------------------------

export class DecoderBlock extends Module {
  readonly attentionNorm: Norm;
  readonly attention: SelfAttention;
  readonly feedForwardNorm: Norm;
  readonly feedForward: FeedForward;

  constructor(config: ModelConfig, features: ModelFeatures, random: RandomGenerator) {
    super();
    this.attentionNorm = this.registerModule('attentionNorm', createNorm(config, features));
    this.attention = this.registerModule('attention', new SelfAttention(config, features, random));
    this.feedForwardNorm = this.registerModule('feedForwardNorm', createNorm(config, features));
    this.feedForward = this.registerModule(
      'feedForward',
      new FeedForward(config, features, random),
    );
  }

  /**
   * Pre-norm residual block: x + attn(norm(x)), then + mlp(norm(·)). The stream arrives with
   * norm(x) already taken (by the block before, or the model for the first) and leaves normed
   * by `nextNorm` (the next block's attention norm, or the final norm): each residual add and
   * the norm after it are one op, one backend call when no graph is recorded.
   */
  forward(
    input: ResidualStream,
    layout: SequenceLayout,
    cache: KeyValueCache | null,
    layerIndex: number,
    nextNorm: Norm,
  ): ResidualStream {
    const attended = this.attention.forward(input.normed, layout, cache, layerIndex);
    const middle = this.feedForwardNorm.addThenForward(input.hidden, attended);
    return nextNorm.addThenForward(middle.hidden, this.feedForward.forward(middle.normed));
  }
}

// ---- model ---------------------------------------------------------------------------------

export interface ForwardInput {
  /** [batch·length] token ids. */
  ids: Int32Array;
  batch: number;
  length: number;
  /** @default queryStart + t for every row */
  positions?: Int32Array;
  /** [batch, keyCapacity] (keyCapacity = cache capacity, or length without a cache). */
  keyMask?: Float32Array | null;
  /** Decoding: keys/values of earlier tokens; this call appends to it. No gradients. */
  cache?: KeyValueCache | null;
  /**
   * Instead of a cache, with gradients: keys and values before the pass's own (`before`
   * slots; keyMask then covers before + length) or kept for a later pass.
   */
  keysValues?: LayerKeysValues | null;
  /**
   * Only these flattened rows (b·length + t) get logits: scoring needs logits only at
   * completion positions, and the LM head is the widest matmul of a small model.
   */
  rows?: Int32Array;
}

export class TransformerLM extends Module {
  readonly config: ModelConfig;
  readonly tokenEmbedding: Tensor;
  readonly positionEmbedding: Tensor | null;
  readonly blocks: DecoderBlock[];
  readonly finalNorm: Norm;
  readonly outputHead: LinearLayer | null;

  constructor(configInput: ModelConfigInput | ModelConfig, random: RandomGenerator) {
    super();
    const config = resolveModelConfig(configInput);
    this.config = config;
    const { vocabSize, hiddenSize } = config;
    this.tokenEmbedding = this.registerParameter(
      'tokenEmbedding',
      parameter(normalValues(vocabSize * hiddenSize, 0.02, random), [vocabSize, hiddenSize]),
    );
    const features = modelFeatures(config);
    this.positionEmbedding =
      features.positions === 'learned'
        ? this.registerParameter(
            'positionEmbedding',
            parameter(normalValues(config.maxPositions * hiddenSize, 0.01, random), [
              config.maxPositions,
              hiddenSize,
            ]),
          )
        : null;
    this.blocks = [];
    for (let index = 0; index < config.layers; index++) {
      this.blocks.push(
        this.registerModule(`blocks.${index}`, new DecoderBlock(config, features, random)),
      );
    }
    this.finalNorm = this.registerModule('finalNorm', createNorm(config, features));
    this.outputHead = config.tieEmbeddings
      ? null
      : this.registerModule(
          'outputHead',
          new Linear(hiddenSize, vocabSize, { bias: false, random }),
        );
  }

  /** Hidden states after the final norm: [batch, length, hidden]. */
  forwardHidden(input: ForwardInput): Tensor {
    const { batch, length, ids } = input;
    if (ids.length !== batch * length)
      throw new ShapeError(`forward: ${ids.length} ids for batch ${batch} × length ${length}`);
    const cache = input.cache ?? null;
    if (cache && isGradientEnabled())
      throw new Error('a KV cache is for decoding: run it under noGrad()');
    const keysValues = input.keysValues ?? null;
    if (cache && keysValues) throw new Error('forward: a KV cache or keysValues, not both');
    const queryStart = cache ? cache.length : (keysValues?.before ?? 0);
    if (queryStart + length > this.config.maxPositions) {
      throw new ShapeError(
        `sequence of ${queryStart + length} tokens exceeds the model's maxPositions ${this.config.maxPositions}`,
      );
    }
    const positions = input.positions ?? defaultPositions(batch, length, queryStart);
    const layout: SequenceLayout = {
      batch,
      length,
      positions,
      keyMask: input.keyMask ?? null,
      queryStart,
      keysValues,
    };
    let hidden = embedding(this.tokenEmbedding, ids, [batch, length]); // [B, T, C]
    if (this.positionEmbedding) {
      for (const position of positions) {
        if (position < 0 || position >= this.config.maxPositions)
          throw new ShapeError(`position ${position} outside [0, ${this.config.maxPositions})`);
      }
      hidden = add(hidden, embedding(this.positionEmbedding, positions, [batch, length]));
    }
    // Without gradients nothing needs a layer's intermediates once the next layer has its
    // input, so each block runs in its own scope and its input is freed right after: peak
    // memory is a few activations instead of every layer's (SmolLM2-135M shape, 16 × 320
    // positions: 6.7 GB peak resident before, 0.86 GB after, of which 0.63 GB are the weights).
    const freeAsWeGo = !isGradientEnabled();
    const firstNorm = this.blocks[0]?.attentionNorm ?? this.finalNorm;
    let stream: ResidualStream = { hidden, normed: firstNorm.forward(hidden) };
    this.blocks.forEach((block, index) => {
      const nextNorm = this.blocks[index + 1]?.attentionNorm ?? this.finalNorm;
      if (!freeAsWeGo) {
        stream = block.forward(stream, layout, cache, index, nextNorm);
        return;
      }
      const input = stream;
      stream = tidy(() => block.forward(input, layout, cache, index, nextNorm));
      input.hidden.dispose();
      input.normed.dispose();
    });
    if (cache) cache.advance(length);
    // The last stream is normed by the final norm: the hidden states this returns.
    if (freeAsWeGo && this.blocks.length > 0) stream.hidden.dispose();
    return stream.normed;
  }

  /** Logits [rows, vocab] for every position (rows = batch·length) or for `input.rows`. */
  forward(input: ForwardInput): Tensor {
    let hidden = this.forwardHidden(input); // [B, T, C]
    if (input.rows) hidden = selectRows(hidden, input.rows);
    return this.head(hidden);
  }

  /** The LM head: final hidden states [..., hidden] → logits [..., vocab]. */
  head(hidden: Tensor): Tensor {
    return this.outputHead
      ? this.outputHead.forward(hidden)
      : matmul(hidden, this.tokenEmbedding, {
          transposeB: true,
          fixedOrder: !this.tokenEmbedding.requiresGrad, // as Linear.forward
        });
  }
}

export function defaultPositions(batch: number, length: number, start: number): Int32Array {
  const positions = new Int32Array(batch * length);
  for (let row = 0; row < batch; row++)
    for (let t = 0; t < length; t++) positions[row * length + t] = start + t;
  return positions;
}
