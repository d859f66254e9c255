import protobuf from 'protobufjs';

/**
 * The protobuf messages of the Tinker API that travel as binary: the body of
 * `/api/v1/forward_backward` (also used for `forward`, with `forward_only` set) and the
 * `retrieve_future` answers for forward/backward outputs and samples (sent when the client asks
 * with `Accept: application/x-protobuf`).
 *
 * Field names, numbers and types follow `tinker_public.proto` as shipped inside the Python SDK
 * `tinker` 0.25.0 (github.com/thinking-machines-lab/tinker, commit d595dc2). Messages the SDK
 * defines but teamtr never sends or reads (image and audio chunks' contents, top-k prompt
 * log-probs) are declared only as far as needed to reject them with a clear error. Proto3
 * `optional` bytes are read as the SDK reads them: empty means absent.
 *
 * Conventions of that SDK that the schema alone does not say, and which teamtr follows:
 * - token ids in an encoded-text chunk are packed little-endian int32 bytes;
 * - a dense Tensor is its elements' little-endian bytes in the declared dtype (float32 or int64);
 * - a BatchedTensor concatenates every datum's bytes; `offsets` is int64 byte offsets, one more
 *   than the number of datums; `trailing_shape` is each datum's shape without its first axis;
 * - a sampled sequence's tokens are int32 bytes and its log-probs float32 bytes.
 */

const packageName = 'tinker_public';

const schema = {
  nested: {
    [packageName]: {
      nested: {
        StopReason: { values: { STOP_REASON_STOP: 0, STOP_REASON_LENGTH: 1 } },
        DType: {
          values: {
            DTYPE_UNSPECIFIED: 0,
            DTYPE_FLOAT32: 1,
            DTYPE_INT64: 2,
            DTYPE_INT32: 3,
            DTYPE_BFLOAT16: 4,
          },
        },
        SampleResponse: {
          fields: {
            sequences: { rule: 'repeated', type: 'SampledSequence', id: 1 },
            prompt_logprobs: { type: 'bytes', id: 2 },
            topk_prompt_logprobs: { type: 'TopkPromptLogprobs', id: 3 },
            prompt_cache_hit_tokens: { type: 'int32', id: 4 },
          },
        },
        SampledSequence: {
          fields: {
            stop_reason: { type: 'StopReason', id: 1 },
            tokens: { type: 'bytes', id: 2 },
            logprobs: { type: 'bytes', id: 3 },
          },
        },
        TopkPromptLogprobs: {
          fields: {
            token_ids: { type: 'bytes', id: 1 },
            logprobs: { type: 'bytes', id: 2 },
            k: { type: 'uint32', id: 3 },
            prompt_length: { type: 'uint32', id: 4 },
          },
        },
        SparseCsr: {
          fields: {
            values: { type: 'bytes', id: 1 },
            crow_indices: { type: 'bytes', id: 2 },
            col_indices: { type: 'bytes', id: 3 },
          },
        },
        Tensor: {
          oneofs: { encoding: { oneof: ['dense', 'sparse_csr'] } },
          fields: {
            dense: { type: 'bytes', id: 1 },
            sparse_csr: { type: 'SparseCsr', id: 2 },
            dtype: { type: 'DType', id: 3 },
            shape: { rule: 'repeated', type: 'int64', id: 4 },
          },
        },
        BatchedTensor: {
          fields: {
            data: { type: 'bytes', id: 1 },
            offsets: { type: 'bytes', id: 2 },
            dtype: { type: 'DType', id: 3 },
            trailing_shape: { rule: 'repeated', type: 'int64', id: 4 },
          },
        },
        ArrayRecord: {
          fields: {
            type_tag: { type: 'string', id: 1 },
            fields: { keyType: 'string', type: 'BatchedTensor', id: 2 },
            num_datums: { type: 'int64', id: 3 },
          },
        },
        ForwardBackwardOutput: {
          fields: {
            loss_fn_output_type: { type: 'string', id: 1 },
            loss_fn_outputs: { rule: 'repeated', type: 'ArrayRecord', id: 2 },
            metrics: { keyType: 'string', type: 'double', id: 3 },
          },
        },
        ForwardBackwardRequest: {
          fields: {
            model_id: { type: 'string', id: 1 },
            seq_id: { type: 'int32', id: 2 },
            data: { rule: 'repeated', type: 'Datum', id: 3 },
            loss_fn: { type: 'string', id: 4 },
            loss_fn_config: { keyType: 'string', type: 'double', id: 5 },
            forward_only: { type: 'bool', id: 6 },
          },
        },
        Datum: {
          fields: {
            model_input: { rule: 'repeated', type: 'Chunk', id: 1 },
            loss_fn_inputs: { keyType: 'string', type: 'Tensor', id: 2 },
          },
        },
        Chunk: {
          oneofs: { chunk: { oneof: ['encoded_text', 'image', 'dmel'] } },
          fields: {
            encoded_text: { type: 'EncodedTextChunk', id: 1 },
            image: { type: 'OpaqueChunk', id: 2 },
            dmel: { type: 'OpaqueChunk', id: 3 },
          },
        },
        EncodedTextChunk: { fields: { tokens: { type: 'bytes', id: 1 } } },
        /** Image and audio chunks: teamtr's engine reads text only, so their fields stay opaque. */
        OpaqueChunk: { fields: {} },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(schema);

/** The message types, looked up once. */
export const wireTypes = {
  forwardBackwardRequest: root.lookupType(`${packageName}.ForwardBackwardRequest`),
  forwardBackwardOutput: root.lookupType(`${packageName}.ForwardBackwardOutput`),
  sampleResponse: root.lookupType(`${packageName}.SampleResponse`),
};

/** DType enum values on the wire. */
export const wireDType = {
  float32: 1,
  int64: 2,
  int32: 3,
  bfloat16: 4,
} as const;

export const wireStopReason = { stop: 0, length: 1 } as const;

/** The content type the SDK uses for binary bodies and answers. */
export const protobufContentType = 'application/x-protobuf';

/** protobufjs gives int64 fields as Long objects (or numbers); both become plain numbers. */
export function wireInteger(value: unknown): number {
  if (typeof value === 'number') return value;
  if (value !== null && typeof value === 'object' && 'toNumber' in value)
    return (value as { toNumber(): number }).toNumber();
  return Number(value ?? 0);
}
