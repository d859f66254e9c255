import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { CharTokenizer } from '../../tokenizer/char.js';

/**
 * A teamtr checkpoint of a one-layer llama model of any size whose model.safetensors is a
 * sparse file: the header lists every tensor with its full size, the data region is a hole.
 * It costs no disk, so tests can hand the loader checkpoints larger than the machine.
 */
export function writeSparseCheckpoint(
  directory: string,
  sizes: { vocabSize: number; hiddenSize: number; intermediateSize: number },
): void {
  const { vocabSize, hiddenSize, intermediateSize } = sizes;
  mkdirSync(directory, { recursive: true });
  const config = {
    architecture: 'llama',
    vocabSize,
    hiddenSize,
    layers: 1,
    heads: 8,
    intermediateSize,
    maxPositions: 64,
  };
  writeFileSync(path.join(directory, 'config.json'), JSON.stringify(config));
  writeFileSync(
    path.join(directory, 'tokenizer.json'),
    JSON.stringify(new CharTokenizer({ alphabet: 'ab' }).toJSON()),
  );
  const shapes: Array<[string, number[]]> = [
    ['tokenEmbedding', [vocabSize, hiddenSize]],
    ['blocks.0.attentionNorm.weight', [hiddenSize]],
    ...['query', 'key', 'value', 'output'].map((name): [string, number[]] => [
      `blocks.0.attention.${name}Projection.weight`,
      [hiddenSize, hiddenSize],
    ]),
    ['blocks.0.feedForwardNorm.weight', [hiddenSize]],
    ['blocks.0.feedForward.gateProjection.weight', [intermediateSize, hiddenSize]],
    ['blocks.0.feedForward.upProjection.weight', [intermediateSize, hiddenSize]],
    ['blocks.0.feedForward.downProjection.weight', [hiddenSize, intermediateSize]],
    ['finalNorm.weight', [hiddenSize]],
    ['outputHead.weight', [vocabSize, hiddenSize]],
  ];
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, shape] of shapes) {
    const bytes = shape.reduce((product, size) => product * size, 4);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(
    JSON.stringify(header).padEnd(Math.ceil(JSON.stringify(header).length / 8) * 8),
  );
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  const descriptor = openSync(path.join(directory, 'model.safetensors'), 'w');
  try {
    writeSync(descriptor, prefix);
    writeSync(descriptor, json);
    // One byte at the very end makes the file its full length; everything before is a hole.
    writeSync(descriptor, Buffer.alloc(1), 0, 1, 8 + json.length + offset - 1);
  } finally {
    closeSync(descriptor);
  }
}
