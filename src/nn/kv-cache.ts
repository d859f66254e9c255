import { ShapeError } from '../util/errors.js';
import { checkAllocation } from '../util/memory-bound.js';
import { formatShape, Tensor } from '../tensor/index.js';
import type { ModelConfig } from './config.js';

/** What to do when sampling a batch needs more memory than there is. */
export const samplingRemedy =
  'sample fewer sequences at once (in training: rollout.problemsPerBatch × rollout.groupSize, evaluation.problems, certificate.heldOutProblems) or shorter turns';

/**
 * Keys and values of every layer for a batch of sequences being decoded, laid out
 * [batch, capacity, kvHeads·headDim] so the attention kernel reads them in place. All rows
 * advance together; rows of different lengths are left-padded and masked (see generate.ts).
 */
export class KeyValueCache {
  length = 0;
  private readonly layers: Array<{ key: Tensor; value: Tensor }>;
  private readonly width: number;

  constructor(
    config: ModelConfig,
    readonly batch: number,
    readonly capacity: number,
  ) {
    if (capacity > config.maxPositions) {
      throw new ShapeError(
        `cache capacity ${capacity} exceeds the model's maxPositions ${config.maxPositions}`,
      );
    }
    this.width = config.kvHeads * config.headDim;
    const size = batch * capacity * this.width;
    // Sized by how many sequences are sampled at once: refused before anything is allocated.
    checkAllocation({
      what: `the key/value cache of ${batch.toLocaleString('en-US')} sequences × ${capacity} positions`,
      bytes: 2 * config.layers * size * Float32Array.BYTES_PER_ELEMENT,
      largestArrayElements: size,
      remedy: samplingRemedy,
    });
    this.layers = [];
    for (let index = 0; index < config.layers; index++) {
      this.layers.push({
        key: new Tensor(new Float32Array(size), [batch, capacity, this.width]).keep(),
        value: new Tensor(new Float32Array(size), [batch, capacity, this.width]).keep(),
      });
    }
  }

  /** Writes new keys/values [batch, length, width] at slots [start, start + length). */
  append(
    layerIndex: number,
    key: Tensor,
    value: Tensor,
    start: number,
  ): { key: Tensor; value: Tensor } {
    const layer = this.layers[layerIndex]!;
    const [batch, length, width] = key.shape as [number, number, number];
    if (batch !== this.batch || width !== this.width || start + length > this.capacity) {
      throw new ShapeError(
        `cache append of ${formatShape(key.shape)} at slot ${start} does not fit cache [${this.batch}, ${this.capacity}, ${this.width}]`,
      );
    }
    const rowSize = length * width;
    copyRowsInto(key.data, layer.key.data, batch, rowSize, this.capacity * width, start * width);
    copyRowsInto(
      value.data,
      layer.value.data,
      batch,
      rowSize,
      this.capacity * width,
      start * width,
    );
    return layer;
  }

  /**
   * Copies `length` slots of every layer's keys and values from `source`'s row `sourceRow`
   * (from slot `sourceStart`) into this cache's row `row` (from slot `start`): a prompt prefix
   * computed once for several rows (shared-prefix.ts).
   */
  copyRows(
    source: KeyValueCache,
    copy: { sourceRow: number; sourceStart: number; row: number; start: number; length: number },
  ): void {
    const { sourceRow, sourceStart, row, start, length } = copy;
    if (
      source.width !== this.width ||
      source.layers.length !== this.layers.length ||
      sourceStart + length > source.capacity ||
      start + length > this.capacity ||
      sourceRow >= source.batch ||
      row >= this.batch
    ) {
      throw new ShapeError(
        `cache copy of ${length} slots from row ${sourceRow} slot ${sourceStart} of [${source.batch}, ${source.capacity}, ${source.width}] to row ${row} slot ${start} of [${this.batch}, ${this.capacity}, ${this.width}] does not fit`,
      );
    }
    const from = (sourceRow * source.capacity + sourceStart) * this.width;
    const to = (row * this.capacity + start) * this.width;
    const size = length * this.width;
    this.layers.forEach((layer, index) => {
      const origin = source.layers[index]!;
      layer.key.data.set(origin.key.data.subarray(from, from + size), to);
      layer.value.data.set(origin.value.data.subarray(from, from + size), to);
    });
  }

  /** Called once per forward, after every layer appended. */
  advance(length: number): void {
    this.length += length;
  }

  destroy(): void {
    for (const layer of this.layers) {
      layer.key.destroy();
      layer.value.destroy();
    }
  }
}

/**
 * Copies `rows` runs of `rowSize` floats, packed in `source`, into `target` every `stride`
 * floats from `offset`. A decode step's runs are one token's keys (192 floats for SmolLM2):
 * an element loop then beats `set` on a `subarray`, whose view object costs more than the copy
 * (the cache append was a quarter of a batch-16 decode step's JavaScript time).
 */
function copyRowsInto(
  source: Float32Array,
  target: Float32Array,
  rows: number,
  rowSize: number,
  stride: number,
  offset: number,
): void {
  if (rowSize >= 2048) {
    for (let row = 0; row < rows; row++)
      target.set(source.subarray(row * rowSize, (row + 1) * rowSize), offset + row * stride);
    return;
  }
  for (let row = 0; row < rows; row++) {
    const from = row * rowSize;
    const to = offset + row * stride;
    for (let index = 0; index < rowSize; index++) target[to + index] = source[from + index]!;
  }
}
