import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
  WireFormatError,
} from './wire-codec.js';

/**
 * The fixtures were encoded by the Python SDK's own code (its generated tinker_public_pb2 and
 * its request encoder, run by scripts/tinker-sdk-fixtures.py), so these tests check teamtr's
 * codec against what the SDK really sends and reads, not only against our reading of it.
 */
const fixtures = JSON.parse(
  readFileSync(new URL('./test-support/sdk-fixtures.json', import.meta.url), 'utf8'),
) as Record<string, string>;
const bytesOf = (name: string) => new Uint8Array(Buffer.from(fixtures[name]!, 'hex'));

const importanceSamplingBody = {
  modelId: 'model-a',
  seqId: 3,
  lossFunction: 'importance_sampling',
  lossFunctionConfig: { clip_low_threshold: 0.8 },
  forwardOnly: false,
  data: [
    {
      inputTokens: [1, 5, 9],
      lossInputs: {
        target_tokens: { dtype: 'int64' as const, data: [5, 9, 2], shape: [3] },
        logprobs: { dtype: 'float32' as const, data: [-0.5, -1.25, -2], shape: [3] },
        advantages: { dtype: 'float32' as const, data: [0, 1.5, 1.5], shape: [3] },
      },
    },
    {
      inputTokens: [1, 7],
      lossInputs: {
        target_tokens: { dtype: 'int64' as const, data: [7, 300000], shape: [2] },
        logprobs: { dtype: 'float32' as const, data: [-0.75, -3.5], shape: [2] },
        advantages: { dtype: 'float32' as const, data: [0, -0.5], shape: [2] },
      },
    },
  ],
};

describe('forward_backward request', () => {
  test('decodes the SDK-encoded importance-sampling batch field by field', () => {
    assert.deepEqual(
      decodeForwardBackwardRequest(bytesOf('importanceSamplingRequest')),
      importanceSamplingBody,
    );
  });

  test('decodes the SDK-encoded forward-only request', () => {
    const body = decodeForwardBackwardRequest(bytesOf('forwardOnlyRequest'));
    assert.equal(body.forwardOnly, true);
    assert.equal(body.lossFunction, 'cross_entropy');
    assert.deepEqual(body.data[0]!.inputTokens, [2, 4, 6, 8]);
    assert.deepEqual(body.data[0]!.lossInputs.weights!.data, [0, 1, 1, 0.5]);
    assert.deepEqual(body.data[0]!.lossInputs.target_tokens!.data, [4, 6, 8, 3]);
  });

  test('what teamtr encodes decodes to the same request as the SDK bytes', () => {
    const ours = encodeForwardBackwardRequest(importanceSamplingBody);
    assert.deepEqual(
      decodeForwardBackwardRequest(ours),
      decodeForwardBackwardRequest(bytesOf('importanceSamplingRequest')),
    );
  });

  test('a body that is not protobuf, or a tensor of the wrong size, is a WireFormatError', () => {
    assert.throws(
      () => decodeForwardBackwardRequest(new Uint8Array([0xff, 0xff, 0xff])),
      WireFormatError,
    );
    const bad = encodeForwardBackwardRequest({
      ...importanceSamplingBody,
      data: [
        {
          inputTokens: [1],
          lossInputs: { weights: { dtype: 'float32', data: [1, 2], shape: [3] } },
        },
      ],
    });
    assert.throws(
      () => decodeForwardBackwardRequest(bad),
      /data\[0\]\.loss_fn_inputs\.weights: shape \[3\] does not match its 2 elements/,
    );
  });
});

describe('answers', () => {
  test('a ForwardBackwardOutput built with the SDK schema decodes per datum', () => {
    const output = decodeForwardBackwardOutput(bytesOf('forwardBackwardOutput'));
    assert.deepEqual(output.metrics, { 'loss:sum': 2.5 });
    assert.deepEqual(
      output.lossOutputs.map((outputs) => outputs.logprobs),
      [
        { dtype: 'float32', data: [-0.5, -1, -1.5], shape: [3] },
        { dtype: 'float32', data: [-2, -2.5], shape: [2] },
      ],
    );
  });

  test('teamtr encodes a ForwardBackwardOutput byte for byte as the SDK schema does', () => {
    const decoded = decodeForwardBackwardOutput(bytesOf('forwardBackwardOutput'));
    assert.deepEqual(
      Buffer.from(encodeForwardBackwardOutput(decoded)).toString('hex'),
      fixtures.forwardBackwardOutput,
    );
  });

  test('a SampleResponse decodes and re-encodes byte for byte', () => {
    const sample = decodeSampleResponse(bytesOf('sampleResponse'));
    assert.deepEqual(sample, {
      sequences: [
        { tokens: [11, 12, 13], logProbs: [-0.25, -0.5, -0.125], stopReason: 'stop' },
        { tokens: [14], logProbs: [-4], stopReason: 'length' },
      ],
      promptLogProbs: null,
    });
    assert.equal(
      Buffer.from(encodeSampleResponse(sample)).toString('hex'),
      fixtures.sampleResponse,
    );
  });
});
