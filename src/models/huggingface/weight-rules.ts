import type { ModelConfig } from '../../nn/config.js';

/**
 * How Hugging Face tensor names map onto the engine's parameter names. Each rule names one
 * Hugging Face tensor and the engine parameters it fills. Most are copies (both store Linear
 * weights [out, in]); GPT-2's Conv1D stores [in, out], so it is transposed, and its fused
 * `c_attn` [in, 3·out] splits into the query, key and value projections. Rules are data, so
 * loading and exporting read the same table in opposite directions.
 */
export interface WeightRule {
  /** The Hugging Face tensor name. */
  source: string;
  /** Its shape in the Hugging Face file. */
  sourceShape: number[];
  /** Engine parameters filled from it, splitting the output dimension into equal parts. */
  targets: string[];
  /** Conv1D storage [in, out] (transposed relative to the engine's [out, in]). */
  transposed: boolean;
}

/** Tensors some checkpoints carry that are not parameters (buffers); loading skips them. */
export interface WeightLayout {
  rules: WeightRule[];
  isIgnorable(name: string): boolean;
}

const copy = (source: string, sourceShape: number[], target: string): WeightRule => ({
  source,
  sourceShape,
  targets: [target],
  transposed: false,
});

/** One Llama-family layer: [Hugging Face suffix, engine suffix, shape, present]. */
function llamaLayerRules(config: ModelConfig, layer: number): WeightRule[] {
  const { hiddenSize: hidden, heads, kvHeads, headDim, intermediateSize: inner } = config;
  const [query, keyValue, bias, norm] = [
    heads * headDim,
    kvHeads * headDim,
    config.attentionBias,
    config.queryKeyNorm,
  ];
  const entries: Array<[string, string, number[], boolean]> = [
    ['input_layernorm.weight', 'attentionNorm.weight', [hidden], true],
    ['self_attn.q_proj.weight', 'attention.queryProjection.weight', [query, hidden], true],
    ['self_attn.q_proj.bias', 'attention.queryProjection.bias', [query], bias],
    ['self_attn.k_proj.weight', 'attention.keyProjection.weight', [keyValue, hidden], true],
    ['self_attn.k_proj.bias', 'attention.keyProjection.bias', [keyValue], bias],
    ['self_attn.v_proj.weight', 'attention.valueProjection.weight', [keyValue, hidden], true],
    ['self_attn.v_proj.bias', 'attention.valueProjection.bias', [keyValue], bias],
    ['self_attn.o_proj.weight', 'attention.outputProjection.weight', [hidden, query], true],
    ['self_attn.q_norm.weight', 'attention.queryNorm.weight', [headDim], norm],
    ['self_attn.k_norm.weight', 'attention.keyNorm.weight', [headDim], norm],
    ['post_attention_layernorm.weight', 'feedForwardNorm.weight', [hidden], true],
    ['mlp.gate_proj.weight', 'feedForward.gateProjection.weight', [inner, hidden], true],
    ['mlp.up_proj.weight', 'feedForward.upProjection.weight', [inner, hidden], true],
    ['mlp.down_proj.weight', 'feedForward.downProjection.weight', [hidden, inner], true],
  ];
  return entries
    .filter(([, , , present]) => present)
    .map(([hf, ours, shape]) =>
      copy(`model.layers.${layer}.${hf}`, shape, `blocks.${layer}.${ours}`),
    );
}

function llamaLayout(config: ModelConfig): WeightLayout {
  const { hiddenSize, vocabSize } = config;
  const rules: WeightRule[] = [
    copy('model.embed_tokens.weight', [vocabSize, hiddenSize], 'tokenEmbedding'),
  ];
  for (let layer = 0; layer < config.layers; layer++) rules.push(...llamaLayerRules(config, layer));
  rules.push(copy('model.norm.weight', [hiddenSize], 'finalNorm.weight'));
  if (!config.tieEmbeddings)
    rules.push(copy('lm_head.weight', [vocabSize, hiddenSize], 'outputHead.weight'));
  return {
    rules,
    // A tied model may still store lm_head (equal to the embedding); older ones store RoPE buffers.
    isIgnorable: (name) =>
      name.endsWith('.rotary_emb.inv_freq') || (config.tieEmbeddings && name === 'lm_head.weight'),
  };
}

/** One GPT-2 layer; Conv1D weights are transposed, c_attn splits into query, key and value. */
function gpt2LayerRules(config: ModelConfig, prefix: string, layer: number): WeightRule[] {
  const { hiddenSize: width, intermediateSize: inner } = config;
  const hf = `${prefix}h.${layer}`;
  const ours = `blocks.${layer}`;
  const conv = (source: string, sourceShape: number[], targets: string[]): WeightRule => ({
    source,
    sourceShape,
    targets,
    transposed: true,
  });
  const qkv = ['query', 'key', 'value'].map((name) => `${ours}.attention.${name}Projection`);
  return [
    copy(`${hf}.ln_1.weight`, [width], `${ours}.attentionNorm.weight`),
    copy(`${hf}.ln_1.bias`, [width], `${ours}.attentionNorm.bias`),
    conv(
      `${hf}.attn.c_attn.weight`,
      [width, 3 * width],
      qkv.map((name) => `${name}.weight`),
    ),
    {
      source: `${hf}.attn.c_attn.bias`,
      sourceShape: [3 * width],
      targets: qkv.map((name) => `${name}.bias`),
      transposed: false,
    },
    conv(`${hf}.attn.c_proj.weight`, [width, width], [`${ours}.attention.outputProjection.weight`]),
    copy(`${hf}.attn.c_proj.bias`, [width], `${ours}.attention.outputProjection.bias`),
    copy(`${hf}.ln_2.weight`, [width], `${ours}.feedForwardNorm.weight`),
    copy(`${hf}.ln_2.bias`, [width], `${ours}.feedForwardNorm.bias`),
    conv(`${hf}.mlp.c_fc.weight`, [width, inner], [`${ours}.feedForward.upProjection.weight`]),
    copy(`${hf}.mlp.c_fc.bias`, [inner], `${ours}.feedForward.upProjection.bias`),
    conv(`${hf}.mlp.c_proj.weight`, [inner, width], [`${ours}.feedForward.downProjection.weight`]),
    copy(`${hf}.mlp.c_proj.bias`, [width], `${ours}.feedForward.downProjection.bias`),
  ];
}

/** GPT-2; `prefix` is "transformer." for GPT2LMHeadModel files and "" for bare GPT2Model ones. */
function gpt2Layout(config: ModelConfig, prefix: string): WeightLayout {
  const { hiddenSize: width, vocabSize } = config;
  const rules: WeightRule[] = [
    copy(`${prefix}wte.weight`, [vocabSize, width], 'tokenEmbedding'),
    copy(`${prefix}wpe.weight`, [config.maxPositions, width], 'positionEmbedding'),
  ];
  for (let layer = 0; layer < config.layers; layer++)
    rules.push(...gpt2LayerRules(config, prefix, layer));
  rules.push(
    copy(`${prefix}ln_f.weight`, [width], 'finalNorm.weight'),
    copy(`${prefix}ln_f.bias`, [width], 'finalNorm.bias'),
  );
  if (!config.tieEmbeddings)
    rules.push(copy('lm_head.weight', [vocabSize, width], 'outputHead.weight'));
  return {
    rules,
    // The causal-mask buffers of older GPT-2 files.
    isIgnorable: (name) =>
      /\.attn\.(masked_)?bias$/.test(name) || (config.tieEmbeddings && name === 'lm_head.weight'),
  };
}

/**
 * The layout of a model; `fileNames` (every tensor name in the checkpoint) picks GPT-2's prefix.
 * Without names (exporting), GPT-2 is written the way GPT2LMHeadModel saves it.
 */
export function weightLayout(config: ModelConfig, fileNames?: ReadonlySet<string>): WeightLayout {
  if (config.architecture === 'llama') return llamaLayout(config);
  const bare =
    fileNames !== undefined &&
    fileNames.has('wte.weight') &&
    !fileNames.has('transformer.wte.weight');
  return gpt2Layout(config, bare ? '' : 'transformer.');
}

/** Copies a Hugging Face tensor into its engine parameters (see WeightRule). */
export function scatterRule(
  rule: WeightRule,
  data: Float32Array,
  targetOf: (name: string) => Float32Array,
): void {
  const parts = rule.targets.length;
  if (!rule.transposed) {
    const size = data.length / parts;
    rule.targets.forEach((name, part) =>
      targetOf(name).set(data.subarray(part * size, (part + 1) * size)),
    );
    return;
  }
  const [input, total] = rule.sourceShape as [number, number];
  const output = total / parts;
  rule.targets.forEach((name, part) => {
    const target = targetOf(name); // [output, input]
    for (let row = 0; row < input; row++) {
      const sourceRow = row * total + part * output;
      for (let column = 0; column < output; column++)
        target[column * input + row] = data[sourceRow + column]!;
    }
  });
}

/** The inverse of scatterRule: the Hugging Face tensor assembled from engine parameters. */
export function gatherRule(
  rule: WeightRule,
  sourceOf: (name: string) => Float32Array,
): Float32Array {
  const size = rule.sourceShape.reduce((product, dimension) => product * dimension, 1);
  const data = new Float32Array(size);
  const parts = rule.targets.length;
  if (!rule.transposed) {
    rule.targets.forEach((name, part) => data.set(sourceOf(name), part * (size / parts)));
    return data;
  }
  const [input, total] = rule.sourceShape as [number, number];
  const output = total / parts;
  rule.targets.forEach((name, part) => {
    const source = sourceOf(name); // [output, input]
    for (let row = 0; row < input; row++) {
      const targetRow = row * total + part * output;
      for (let column = 0; column < output; column++)
        data[targetRow + column] = source[column * input + row]!;
    }
  });
  return data;
}
