import {
  protobufContentType,
  wireDType,
  wireInteger,
  wireStopReason,
  wireTypes,
} from './wire-schema.js';
import type {
  Datum,
  ForwardBackwardResult,
  SampleResult,
  SampledSequence,
  TensorData,
  TensorDtype,
} from './types.js';

export { protobufContentType };

/**
 * Binary bodies of the Tinker API, both ways (see wire-schema.ts for the SDK version they
 * follow). Every decoder checks what it reads and throws WireFormatError naming the field, so
 * a malformed body becomes a clear 400 on the server and a clear error on the client.
 */
export class WireFormatError extends Error {
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'WireFormatError';
  }
}

export interface ForwardBackwardRequestBody {
  modelId: string;
  seqId: number;
  data: Datum[];
  lossFunction: string;
  lossFunctionConfig: Record<string, number>;
  forwardOnly: boolean;
}

// ---- packed numbers (little-endian, as numpy's tobytes() on the SDK's platforms) ----

function packInt32(values: readonly number[]): Uint8Array {
  return new Uint8Array(Int32Array.from(values).buffer);
}

function packInt64(values: readonly number[]): Uint8Array {
  return new Uint8Array(BigInt64Array.from(values, (value) => BigInt(value)).buffer);
}

function packFloat32(values: readonly number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

/** Copies into a fresh aligned buffer: protobufjs hands out views at any byte offset. */
function aligned(bytes: Uint8Array, elementBytes: number, field: string): ArrayBuffer {
  if (bytes.byteLength % elementBytes !== 0)
    throw new WireFormatError(
      field,
      `${bytes.byteLength} bytes is not a whole number of ${elementBytes}-byte elements`,
    );
  return Uint8Array.from(bytes).buffer;
}

function unpackInt32(bytes: Uint8Array, field: string): number[] {
  return Array.from(new Int32Array(aligned(bytes, 4, field)));
}

function unpackInt64(bytes: Uint8Array, field: string): number[] {
  return Array.from(new BigInt64Array(aligned(bytes, 8, field)), (value) => {
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER))
      throw new WireFormatError(field, `${value} does not fit a JavaScript number`);
    return Number(value);
  });
}

function unpackFloat32(bytes: Uint8Array, field: string): number[] {
  return Array.from(new Float32Array(aligned(bytes, 4, field)));
}

function packTensor(tensor: TensorData): Uint8Array {
  return tensor.dtype === 'int64' ? packInt64(tensor.data) : packFloat32(tensor.data);
}

function product(values: readonly number[]): number {
  return values.reduce((total, value) => total * value, 1);
}

// ---- forward_backward request ----

interface WireTensor {
  dense?: Uint8Array;
  sparse_csr?: unknown;
  dtype?: number;
  shape?: unknown[];
}

interface WireChunk {
  encoded_text?: { tokens?: Uint8Array };
  image?: unknown;
  dmel?: unknown;
}

export function encodeForwardBackwardRequest(body: ForwardBackwardRequestBody): Uint8Array {
  const type = wireTypes.forwardBackwardRequest;
  const message = type.fromObject({
    model_id: body.modelId,
    seq_id: body.seqId,
    loss_fn: body.lossFunction,
    loss_fn_config: body.lossFunctionConfig,
    forward_only: body.forwardOnly,
    data: body.data.map((datum) => ({
      model_input: [{ encoded_text: { tokens: packInt32(datum.inputTokens) } }],
      loss_fn_inputs: Object.fromEntries(
        Object.entries(datum.lossInputs).map(([name, tensor]) => [
          name,
          { dense: packTensor(tensor), dtype: wireDType[tensor.dtype], shape: tensor.shape },
        ]),
      ),
    })),
  });
  return type.encode(message).finish();
}

function decodeTensor(tensor: WireTensor, field: string): TensorData {
  if (tensor.sparse_csr !== undefined && tensor.sparse_csr !== null)
    throw new WireFormatError(field, 'sparse CSR tensors are not supported; send dense tensors');
  const dtype: TensorDtype | null =
    tensor.dtype === wireDType.float32
      ? 'float32'
      : tensor.dtype === wireDType.int64
        ? 'int64'
        : null;
  if (dtype === null)
    throw new WireFormatError(field, `dtype ${tensor.dtype} is not float32 (1) or int64 (2)`);
  const bytes = tensor.dense ?? new Uint8Array(0);
  const data = dtype === 'int64' ? unpackInt64(bytes, field) : unpackFloat32(bytes, field);
  const shape = (tensor.shape ?? []).map(wireInteger);
  const resolvedShape = shape.length > 0 ? shape : [data.length];
  if (product(resolvedShape) !== data.length)
    throw new WireFormatError(
      field,
      `shape [${resolvedShape.join(', ')}] does not match its ${data.length} elements`,
    );
  return { dtype, data, shape: resolvedShape };
}

function decodeModelInput(chunks: WireChunk[], field: string): number[] {
  const tokens: number[] = [];
  chunks.forEach((chunk, index) => {
    if (!chunk.encoded_text)
      throw new WireFormatError(
        `${field}[${index}]`,
        'only encoded-text chunks are supported (no image or audio chunks)',
      );
    tokens.push(...unpackInt32(chunk.encoded_text.tokens ?? new Uint8Array(0), field));
  });
  return tokens;
}

export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardRequestBody {
  const type = wireTypes.forwardBackwardRequest;
  let message: protobufMessage;
  try {
    message = type.toObject(type.decode(bytes), { defaults: true, arrays: true, objects: true });
  } catch (error) {
    throw new WireFormatError(
      'ForwardBackwardRequest',
      `not a valid protobuf message (${(error as Error).message})`,
    );
  }
  const data = (
    message.data as Array<{ model_input: WireChunk[]; loss_fn_inputs: Record<string, WireTensor> }>
  ).map((datum, index) => ({
    inputTokens: decodeModelInput(datum.model_input, `data[${index}].model_input`),
    lossInputs: Object.fromEntries(
      Object.entries(datum.loss_fn_inputs).map(([name, tensor]) => [
        name,
        decodeTensor(tensor, `data[${index}].loss_fn_inputs.${name}`),
      ]),
    ),
  }));
  return {
    modelId: message.model_id as string,
    seqId: message.seq_id as number,
    data,
    lossFunction: message.loss_fn as string,
    lossFunctionConfig: message.loss_fn_config as Record<string, number>,
    forwardOnly: message.forward_only as boolean,
  };
}

type protobufMessage = Record<string, unknown>;

// ---- forward_backward output ----

/**
 * One ArrayRecord holding every datum: each field's data concatenated, with byte offsets.
 * Every datum's outputs are 1-D here (one value per input token), so trailing_shape is empty.
 */
export function encodeForwardBackwardOutput(result: ForwardBackwardResult): Uint8Array {
  const names = result.lossOutputs.length > 0 ? Object.keys(result.lossOutputs[0]!) : [];
  const fields = Object.fromEntries(
    names.map((name) => {
      const parts = result.lossOutputs.map((outputs) => outputs[name]!);
      const dtype = parts[0]!.dtype;
      const packed = parts.map(packTensor);
      const offsets = [0];
      for (const part of packed) offsets.push(offsets.at(-1)! + part.byteLength);
      const data = new Uint8Array(offsets.at(-1)!);
      packed.forEach((part, index) => data.set(part, offsets[index]));
      return [
        name,
        { data, offsets: packInt64(offsets), dtype: wireDType[dtype], trailing_shape: [] },
      ];
    }),
  );
  const type = wireTypes.forwardBackwardOutput;
  return type
    .encode(
      type.fromObject({
        loss_fn_output_type: 'ArrayRecord',
        loss_fn_outputs:
          result.lossOutputs.length > 0
            ? [{ type_tag: 'ArrayRecord', fields, num_datums: result.lossOutputs.length }]
            : [],
        metrics: result.metrics,
      }),
    )
    .finish();
}

interface WireBatchedTensor {
  data: Uint8Array;
  offsets: Uint8Array;
  dtype: number;
  trailing_shape: unknown[];
}

function decodeBatchedTensor(tensor: WireBatchedTensor, field: string): TensorData[] {
  const elementBytes = {
    [wireDType.float32]: 4,
    [wireDType.int64]: 8,
    [wireDType.int32]: 4,
    [wireDType.bfloat16]: 2,
  }[tensor.dtype];
  if (elementBytes === undefined) throw new WireFormatError(field, `unknown dtype ${tensor.dtype}`);
  const offsets = unpackInt64(tensor.offsets, `${field}.offsets`);
  const trailing = tensor.trailing_shape.map(wireInteger);
  const trailingSize = product(trailing);
  const parts: TensorData[] = [];
  for (let index = 0; index + 1 < offsets.length; index++) {
    const start = offsets[index]!;
    const end = offsets[index + 1]!;
    if (start > end || end > tensor.data.byteLength)
      throw new WireFormatError(`${field}.offsets`, `[${start}, ${end}) is outside the data`);
    const bytes = tensor.data.subarray(start, end);
    let data: number[];
    let dtype: TensorDtype;
    if (tensor.dtype === wireDType.bfloat16) {
      // bfloat16 is the top half of a float32.
      const halves = new Uint16Array(aligned(bytes, 2, field));
      data = Array.from(new Float32Array(Uint32Array.from(halves, (half) => half << 16).buffer));
      dtype = 'float32';
    } else if (tensor.dtype === wireDType.float32) {
      data = unpackFloat32(bytes, field);
      dtype = 'float32';
    } else {
      data =
        tensor.dtype === wireDType.int64 ? unpackInt64(bytes, field) : unpackInt32(bytes, field);
      dtype = 'int64';
    }
    const leading = trailingSize > 0 ? data.length / trailingSize : 0;
    parts.push({ dtype, data, shape: [leading, ...trailing] });
  }
  return parts;
}

export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardResult {
  const type = wireTypes.forwardBackwardOutput;
  let message: protobufMessage;
  try {
    message = type.toObject(type.decode(bytes), { defaults: true, arrays: true, objects: true });
  } catch (error) {
    throw new WireFormatError(
      'ForwardBackwardOutput',
      `not a valid protobuf message (${(error as Error).message})`,
    );
  }
  const lossOutputs: Array<Record<string, TensorData>> = [];
  const records = message.loss_fn_outputs as Array<{
    fields: Record<string, WireBatchedTensor>;
    num_datums: unknown;
  }>;
  for (const record of records) {
    const perField = Object.entries(record.fields).map(
      ([name, tensor]) => [name, decodeBatchedTensor(tensor, `loss_fn_outputs.${name}`)] as const,
    );
    const count = wireInteger(record.num_datums) || (perField[0]?.[1].length ?? 0);
    for (let index = 0; index < count; index++) {
      const outputs: Record<string, TensorData> = {};
      for (const [name, parts] of perField) {
        if (parts[index] === undefined)
          throw new WireFormatError(`loss_fn_outputs.${name}`, `has no entry for datum ${index}`);
        outputs[name] = parts[index]!;
      }
      lossOutputs.push(outputs);
    }
  }
  return { lossOutputs, metrics: message.metrics as Record<string, number> };
}

// ---- sample response ----

export function encodeSampleResponse(result: SampleResult): Uint8Array {
  const type = wireTypes.sampleResponse;
  const body: Record<string, unknown> = {
    sequences: result.sequences.map((sequence) => ({
      stop_reason: wireStopReason[sequence.stopReason],
      tokens: packInt32(sequence.tokens),
      ...(sequence.logProbs ? { logprobs: packFloat32(sequence.logProbs) } : {}),
    })),
  };
  if (result.promptLogProbs)
    body.prompt_logprobs = packFloat32(result.promptLogProbs.map((value) => value ?? Number.NaN));
  const topK = result.topkPromptLogProbs;
  if (topK)
    body.topk_prompt_logprobs = {
      token_ids: packInt32(topK.tokenIds.flat()),
      logprobs: packFloat32(topK.logProbs.flat()),
      k: topK.k,
      prompt_length: topK.tokenIds.length,
    };
  return type.encode(type.fromObject(body)).finish();
}

export function decodeSampleResponse(bytes: Uint8Array): SampleResult {
  const type = wireTypes.sampleResponse;
  let message: protobufMessage;
  try {
    message = type.toObject(type.decode(bytes), { arrays: true, objects: true, defaults: true });
  } catch (error) {
    throw new WireFormatError(
      'SampleResponse',
      `not a valid protobuf message (${(error as Error).message})`,
    );
  }
  const wireSequences = message.sequences as Array<{
    stop_reason?: number;
    tokens?: Uint8Array;
    logprobs?: Uint8Array;
  }>;
  const sequences: SampledSequence[] = wireSequences.map((sequence, index) => {
    const reason = sequence.stop_reason ?? 0;
    if (reason !== wireStopReason.stop && reason !== wireStopReason.length)
      throw new WireFormatError(`sequences[${index}].stop_reason`, `unknown value ${reason}`);
    const tokens = unpackInt32(sequence.tokens ?? new Uint8Array(0), `sequences[${index}].tokens`);
    const logProbs =
      sequence.logprobs && sequence.logprobs.byteLength > 0
        ? unpackFloat32(sequence.logprobs, `sequences[${index}].logprobs`)
        : null;
    if (logProbs && logProbs.length !== tokens.length)
      throw new WireFormatError(
        `sequences[${index}].logprobs`,
        `${logProbs.length} log-probs for ${tokens.length} tokens`,
      );
    return { tokens, logProbs, stopReason: reason === wireStopReason.stop ? 'stop' : 'length' };
  });
  const topK = message.topk_prompt_logprobs as
    { token_ids: Uint8Array; logprobs: Uint8Array; k: number; prompt_length: number } | undefined;
  const prompt = message.prompt_logprobs as Uint8Array | undefined;
  const promptLogProbs =
    prompt && prompt.byteLength > 0
      ? unpackFloat32(prompt, 'prompt_logprobs').map((value) =>
          Number.isNaN(value) ? null : value,
        )
      : null;
  return topK
    ? { sequences, promptLogProbs, topkPromptLogProbs: decodeTopK(topK) }
    : { sequences, promptLogProbs };
}

function decodeTopK(topK: {
  token_ids: Uint8Array;
  logprobs: Uint8Array;
  k: number;
  prompt_length: number;
}) {
  const ids = unpackInt32(topK.token_ids, 'topk_prompt_logprobs.token_ids');
  const logProbs = unpackFloat32(topK.logprobs, 'topk_prompt_logprobs.logprobs');
  if (ids.length !== topK.k * topK.prompt_length || logProbs.length !== ids.length)
    throw new WireFormatError(
      'topk_prompt_logprobs',
      `${ids.length} ids and ${logProbs.length} log-probs for ${topK.prompt_length} × ${topK.k}`,
    );
  const rows = (values: number[]) =>
    Array.from({ length: topK.prompt_length }, (_row, index) =>
      values.slice(index * topK.k, (index + 1) * topK.k),
    );
  return { k: topK.k, tokenIds: rows(ids), logProbs: rows(logProbs) };
}
