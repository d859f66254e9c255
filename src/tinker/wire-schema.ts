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

/** The messages in protobuf's own language, read by protobufjs's parser (field names kept). */
const schema = `
syntax = "proto3";
package ${packageName};

enum StopReason { STOP_REASON_STOP = 0; STOP_REASON_LENGTH = 1; }
enum DType {
  DTYPE_UNSPECIFIED = 0; DTYPE_FLOAT32 = 1; DTYPE_INT64 = 2; DTYPE_INT32 = 3; DTYPE_BFLOAT16 = 4;
}

message SampleResponse {
  repeated SampledSequence sequences = 1;
  bytes prompt_logprobs = 2;
  TopkPromptLogprobs topk_prompt_logprobs = 3;
  int32 prompt_cache_hit_tokens = 4;
}
message SampledSequence {
  StopReason stop_reason = 1;
  bytes tokens = 2;
  bytes logprobs = 3;
}
message TopkPromptLogprobs {
  bytes token_ids = 1;
  bytes logprobs = 2;
  uint32 k = 3;
  uint32 prompt_length = 4;
}

message SparseCsr {
  bytes values = 1;
  bytes crow_indices = 2;
  bytes col_indices = 3;
}
message Tensor {
  oneof encoding {
    bytes dense = 1;
    SparseCsr sparse_csr = 2;
  }
  DType dtype = 3;
  repeated int64 shape = 4;
}
message BatchedTensor {
  bytes data = 1;
  bytes offsets = 2;
  DType dtype = 3;
  repeated int64 trailing_shape = 4;
}
message ArrayRecord {
  string type_tag = 1;
  map<string, BatchedTensor> fields = 2;
  int64 num_datums = 3;
}
message ForwardBackwardOutput {
  string loss_fn_output_type = 1;
  repeated ArrayRecord loss_fn_outputs = 2;
  map<string, double> metrics = 3;
}

message ForwardBackwardRequest {
  string model_id = 1;
  int32 seq_id = 2;
  repeated Datum data = 3;
  string loss_fn = 4;
  map<string, double> loss_fn_config = 5;
  bool forward_only = 6;
}
message Datum {
  repeated Chunk model_input = 1;
  map<string, Tensor> loss_fn_inputs = 2;
}
message Chunk {
  oneof chunk {
    EncodedTextChunk encoded_text = 1;
    OpaqueChunk image = 2;
    OpaqueChunk dmel = 3;
  }
}
message EncodedTextChunk { bytes tokens = 1; }
// Image and audio chunks: teamtr's engine reads text only, so their fields stay opaque.
message OpaqueChunk {}
`;

const root = protobuf.parse(schema, { keepCase: true }).root;

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
