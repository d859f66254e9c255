/**
 * An independent float64 forward pass over Hugging Face tensors by their Hugging Face names,
 * written from the architectures' definitions (transformers' modeling_llama / qwen2 / qwen3 /
 * mistral / gpt2) and sharing no code with src/nn. One sequence, positions 0..T−1, full causal
 * attention. Returns logits [T·vocab].
 */

type Weights = ReadonlyMap<string, { shape: number[]; data: Float32Array }>;
type Matrix = Float64Array[];

function tensorOf(weights: Weights, name: string): { shape: number[]; data: Float32Array } {
  const found = weights.get(name);
  if (!found) throw new Error(`reference forward: no tensor ${name}`);
  return found;
}

/** y[t] = W·x[t] (+ b) with W stored [out, in] (nn.Linear). */
function linear(input: Matrix, weights: Weights, name: string, withBias: boolean): Matrix {
  const { shape, data } = tensorOf(weights, `${name}.weight`);
  const [out, inner] = shape as [number, number];
  const bias = withBias ? tensorOf(weights, `${name}.bias`).data : null;
  return input.map((row) => {
    const result = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let total = bias ? bias[o]! : 0;
      for (let i = 0; i < inner; i++) total += data[o * inner + i]! * row[i]!;
      result[o] = total;
    }
    return result;
  });
}

/** y[t] = x[t]·W + b with W stored [in, out] (GPT-2's Conv1D). */
function conv1d(input: Matrix, weights: Weights, name: string): Matrix {
  const { shape, data } = tensorOf(weights, `${name}.weight`);
  const [inner, out] = shape as [number, number];
  const bias = tensorOf(weights, `${name}.bias`).data;
  return input.map((row) => {
    const result = Float64Array.from(bias);
    for (let i = 0; i < inner; i++)
      for (let o = 0; o < out; o++) result[o]! += row[i]! * data[i * out + o]!;
    return result;
  });
}

function rmsNorm(row: Float64Array, weight: Float32Array, epsilon: number): Float64Array {
  let squares = 0;
  for (const value of row) squares += value * value;
  const inverse = 1 / Math.sqrt(squares / row.length + epsilon);
  return row.map((value, index) => value * inverse * weight[index]!);
}

function layerNorm(
  row: Float64Array,
  weight: Float32Array,
  bias: Float32Array,
  epsilon: number,
): Float64Array {
  const mean = row.reduce((total, value) => total + value, 0) / row.length;
  const variance = row.reduce((total, value) => total + (value - mean) ** 2, 0) / row.length;
  const inverse = 1 / Math.sqrt(variance + epsilon);
  return row.map((value, index) => (value - mean) * inverse * weight[index]! + bias[index]!);
}

/** Hugging Face rotate_half: within a head, entry i pairs with i + D/2. */
function applyRope(
  row: Float64Array,
  heads: number,
  headDim: number,
  position: number,
  theta: number,
): void {
  const half = headDim / 2;
  for (let head = 0; head < heads; head++) {
    const start = head * headDim;
    for (let i = 0; i < half; i++) {
      const angle = position / Math.pow(theta, (2 * i) / headDim);
      const [first, second] = [row[start + i]!, row[start + half + i]!];
      row[start + i] = first * Math.cos(angle) - second * Math.sin(angle);
      row[start + half + i] = second * Math.cos(angle) + first * Math.sin(angle);
    }
  }
}

/** Causal softmax attention; query head h reads key/value head ⌊h / (heads / kvHeads)⌋. */
function causalAttention(
  query: Matrix,
  key: Matrix,
  value: Matrix,
  heads: number,
  kvHeads: number,
  headDim: number,
): Matrix {
  const group = heads / kvHeads;
  return query.map((queryRow, t) => {
    const output = new Float64Array(heads * headDim);
    for (let head = 0; head < heads; head++) {
      const kvHead = Math.floor(head / group);
      const scores = key.slice(0, t + 1).map((keyRow) => {
        let dot = 0;
        for (let d = 0; d < headDim; d++)
          dot += queryRow[head * headDim + d]! * keyRow[kvHead * headDim + d]!;
        return dot / Math.sqrt(headDim);
      });
      const maximum = Math.max(...scores);
      const weights = scores.map((score) => Math.exp(score - maximum));
      const total = weights.reduce((sum, weight) => sum + weight, 0);
      weights.forEach((weight, s) => {
        for (let d = 0; d < headDim; d++)
          output[head * headDim + d]! += (weight / total) * value[s]![kvHead * headDim + d]!;
      });
    }
    return output;
  });
}

const silu = (x: number) => x / (1 + Math.exp(-x));
const geluTanh = (x: number) =>
  0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

function addInto(target: Matrix, source: Matrix): void {
  target.forEach((row, t) =>
    row.forEach((_value, index) => {
      row[index]! += source[t]![index]!;
    }),
  );
}

function outputLogits(
  hidden: Matrix,
  table: { shape: number[]; data: Float32Array },
): Float64Array {
  const [vocab, width] = table.shape as [number, number];
  const logits = new Float64Array(hidden.length * vocab);
  hidden.forEach((row, t) => {
    for (let v = 0; v < vocab; v++) {
      let total = 0;
      for (let c = 0; c < width; c++) total += row[c]! * table.data[v * width + c]!;
      logits[t * vocab + v] = total;
    }
  });
  return logits;
}

function embed(weights: Weights, name: string, ids: readonly number[]): Matrix {
  const { shape, data } = tensorOf(weights, name);
  const width = shape[1]!;
  return ids.map((id) => Float64Array.from(data.subarray(id * width, (id + 1) * width)));
}

/** Llama, Qwen2 (QKV bias), Qwen3 (QK-norm), Mistral. */
export function referenceLlamaFamily(
  config: Record<string, number | boolean | string>,
  weights: Weights,
  ids: readonly number[],
): Float64Array {
  const heads = config.num_attention_heads as number;
  const kvHeads = config.num_key_value_heads as number;
  const headDim = (config.head_dim as number | undefined) ?? (config.hidden_size as number) / heads;
  const epsilon = config.rms_norm_eps as number;
  const theta = config.rope_theta as number;
  const qkvBias = config.model_type === 'qwen2' || config.attention_bias === true;
  const hidden = embed(weights, 'model.embed_tokens.weight', ids);
  for (let layer = 0; layer < (config.num_hidden_layers as number); layer++) {
    const prefix = `model.layers.${layer}`;
    const normed = hidden.map((row) =>
      rmsNorm(row, tensorOf(weights, `${prefix}.input_layernorm.weight`).data, epsilon),
    );
    const query = linear(normed, weights, `${prefix}.self_attn.q_proj`, qkvBias);
    const key = linear(normed, weights, `${prefix}.self_attn.k_proj`, qkvBias);
    const value = linear(normed, weights, `${prefix}.self_attn.v_proj`, qkvBias);
    if (config.model_type === 'qwen3') {
      const perHead = (rows: Matrix, count: number, name: string) =>
        rows.forEach((row) => {
          for (let head = 0; head < count; head++)
            row.set(
              rmsNorm(
                row.subarray(head * headDim, (head + 1) * headDim),
                tensorOf(weights, name).data,
                epsilon,
              ),
              head * headDim,
            );
        });
      perHead(query, heads, `${prefix}.self_attn.q_norm.weight`);
      perHead(key, kvHeads, `${prefix}.self_attn.k_norm.weight`);
    }
    query.forEach((row, t) => applyRope(row, heads, headDim, t, theta));
    key.forEach((row, t) => applyRope(row, kvHeads, headDim, t, theta));
    addInto(
      hidden,
      linear(
        causalAttention(query, key, value, heads, kvHeads, headDim),
        weights,
        `${prefix}.self_attn.o_proj`,
        false,
      ),
    );
    const normedAgain = hidden.map((row) =>
      rmsNorm(row, tensorOf(weights, `${prefix}.post_attention_layernorm.weight`).data, epsilon),
    );
    const gate = linear(normedAgain, weights, `${prefix}.mlp.gate_proj`, false);
    const up = linear(normedAgain, weights, `${prefix}.mlp.up_proj`, false);
    const activated = gate.map((row, t) => row.map((value, index) => silu(value) * up[t]![index]!));
    addInto(hidden, linear(activated, weights, `${prefix}.mlp.down_proj`, false));
  }
  const final = hidden.map((row) =>
    rmsNorm(row, tensorOf(weights, 'model.norm.weight').data, epsilon),
  );
  return outputLogits(
    final,
    config.tie_word_embeddings
      ? tensorOf(weights, 'model.embed_tokens.weight')
      : tensorOf(weights, 'lm_head.weight'),
  );
}

/** GPT-2 (GPT2LMHeadModel names, tied output). */
export function referenceGpt2(
  config: Record<string, number | boolean | string>,
  weights: Weights,
  ids: readonly number[],
): Float64Array {
  const heads = config.n_head as number;
  const width = config.n_embd as number;
  const headDim = width / heads;
  const epsilon = config.layer_norm_epsilon as number;
  const hidden = embed(weights, 'transformer.wte.weight', ids);
  addInto(
    hidden,
    embed(
      weights,
      'transformer.wpe.weight',
      ids.map((_id, position) => position),
    ),
  );
  const norm = (rows: Matrix, name: string) =>
    rows.map((row) =>
      layerNorm(
        row,
        tensorOf(weights, `${name}.weight`).data,
        tensorOf(weights, `${name}.bias`).data,
        epsilon,
      ),
    );
  for (let layer = 0; layer < (config.n_layer as number); layer++) {
    const prefix = `transformer.h.${layer}`;
    const fused = conv1d(norm(hidden, `${prefix}.ln_1`), weights, `${prefix}.attn.c_attn`);
    const part = (index: number) =>
      fused.map((row) => row.slice(index * width, (index + 1) * width));
    const mixed = causalAttention(part(0), part(1), part(2), heads, heads, headDim);
    addInto(hidden, conv1d(mixed, weights, `${prefix}.attn.c_proj`));
    const inner = conv1d(norm(hidden, `${prefix}.ln_2`), weights, `${prefix}.mlp.c_fc`).map((row) =>
      row.map(geluTanh),
    );
    addInto(hidden, conv1d(inner, weights, `${prefix}.mlp.c_proj`));
  }
  return outputLogits(
    norm(hidden, 'transformer.ln_f'),
    tensorOf(weights, 'transformer.wte.weight'),
  );
}
