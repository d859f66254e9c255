import { getBackend } from '../../backend/index.js';
import type { AttentionForwardArguments } from '../../backend/types.js';
import { ShapeError } from '../../util/errors.js';
import { allocate, release } from '../memory.js';
import {
  createResult,
  formatShape,
  gradientOf,
  gradientToWrite,
  isGradientEnabled,
  Tensor,
} from '../tensor.js';

/**
 * Rotary position embedding (Hugging Face rotate-half convention) on x [batch, length,
 * heads·headDim] (the projection layout: no reshape needed), positions [batch·length].
 * Returns a new tensor; the backward pass rotates the gradient back.
 */
export function rope(
  input: Tensor,
  positions: Int32Array,
  options: { heads: number; theta: number },
): Tensor {
  if (input.rank !== 3 || input.shape[2]! % options.heads !== 0) {
    throw new ShapeError(
      `rope expects [batch, length, heads·headDim] with ${options.heads} heads, got ${formatShape(input.shape)}`,
    );
  }
  const [batch, length, width] = input.shape as [number, number, number];
  const { heads, theta } = options;
  const headDim = width / heads;
  if (positions.length !== batch * length) {
    throw new ShapeError(`rope: ${positions.length} positions for ${batch}×${length} tokens`);
  }
  const backend = getBackend();
  /** `values` rotated by each token's position angles into a new buffer, or back (`inverse`). */
  const rotatedCopy = (values: Float32Array, inverse: boolean): Float32Array => {
    const rotated = allocate(input.size);
    const shape = { positions, batch, length, heads, headDim, theta, inverse };
    backend.rope({ data: rotated, source: values, ...shape });
    return rotated;
  };
  const output = rotatedCopy(input.data, false);
  return createResult(output, input.shape, 'rope', [input], (gradOutput) => {
    const rotated = rotatedCopy(gradOutput, true);
    // gradient += rotated on the kernel threads (a JavaScript loop here was a twentieth of a
    // LoRA step at SmolLM2's shape: the query and key gradients of every layer).
    const { gradient, beta } = gradientToWrite(input);
    backend.axpy({ alpha: 1, x: rotated, y: gradient, beta });
    release(rotated);
  });
}

export interface AttentionOptions {
  heads: number;
  kvHeads: number;
  /** Absolute slot of the first query (keys before it come from a cache). @default 0 */
  queryStart?: number;
  /** Key slots in use (≤ the key tensor's capacity). @default the key tensor's length */
  keyLength?: number;
  /** [batch, keyCapacity], 1 = attend, 0 = padding. */
  keyMask?: Float32Array | null;
}

/**
 * Causal grouped-query attention on the projection layout: query [batch, queryLength,
 * heads·headDim], key/value [batch, keyCapacity, kvHeads·headDim]. Output has the query's
 * shape. Query i sits at slot queryStart + i and sees key slots ≤ its own.
 */
export function attention(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  options: AttentionOptions,
): Tensor {
  const needsGradient =
    isGradientEnabled() && (query.requiresGrad || key.requiresGrad || value.requiresGrad);
  // The kernel's arguments, written out in one place and passed as they are: this runs for
  // every layer of every decode step, where a spread of fifteen properties cost more than the
  // rest of the op's JavaScript (the backward pass, once per step, spreads them).
  const forward = attentionArguments(query, key, value, options, needsGradient);
  const { output, probabilities } = forward;
  const backend = getBackend();
  backend.attention(forward);
  return createResult(
    output,
    query.shape,
    'attention',
    [query, key, value],
    (gradOutput) => {
      backend.attentionBackward({
        ...forward,
        probabilities: probabilities!,
        gradOutput,
        gradQuery: gradientOf(query),
        gradKey: gradientOf(key),
        gradValue: gradientOf(value),
      });
    },
    () => {
      if (probabilities) release(probabilities);
    },
  );
}

/**
 * Checks that query, key, value and the options fit together and returns the forward kernel's
 * arguments: their shape, a new output buffer and (when a backward pass will need them) a new
 * buffer for the probabilities.
 */
function attentionArguments(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  options: AttentionOptions,
  needsGradient: boolean,
): AttentionForwardArguments {
  const { heads, kvHeads } = options;
  if (query.rank !== 3 || key.rank !== 3 || value.rank !== 3) {
    throw new ShapeError(
      `attention expects rank-3 query/key/value, got ${formatShape(query.shape)}, ${formatShape(key.shape)}, ${formatShape(value.shape)}`,
    );
  }
  const [batch, queryLength, queryWidth] = query.shape as [number, number, number];
  const [keyBatch, keyCapacity, keyWidth] = key.shape as [number, number, number];
  const headDim = queryWidth / heads;
  const keyLength = options.keyLength ?? keyCapacity;
  const queryStart = options.queryStart ?? 0;
  const valid =
    Number.isInteger(headDim) &&
    keyWidth === kvHeads * headDim &&
    keyBatch === batch &&
    heads % kvHeads === 0 &&
    value.shape[0] === keyBatch &&
    value.shape[1] === keyCapacity &&
    value.shape[2] === keyWidth &&
    keyLength <= keyCapacity &&
    queryStart + queryLength <= keyLength;
  if (!valid) {
    throw new ShapeError(
      `attention: incompatible query ${formatShape(query.shape)}, key ${formatShape(key.shape)}, value ${formatShape(value.shape)} for ${heads} heads / ${kvHeads} kv heads, queryStart ${queryStart}, keyLength ${keyLength}`,
    );
  }
  const keyMask = options.keyMask ?? null;
  if (keyMask && keyMask.length !== batch * keyCapacity) {
    throw new ShapeError(
      `attention: keyMask has ${keyMask.length} entries, expected ${batch}×${keyCapacity}`,
    );
  }
  return {
    query: query.data,
    key: key.data,
    value: value.data,
    output: allocate(query.size),
    probabilities: needsGradient ? allocate(batch * heads * queryLength * keyLength) : null,
    keyMask,
    batch,
    queryLength,
    keyLength,
    keyCapacity,
    heads,
    kvHeads,
    headDim,
    queryStart,
    scale: 1 / Math.sqrt(headDim),
  };
}
