import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ShapeError } from '../util/errors.js';
import {
  broadcastToTokens,
  packedToGrid,
  placeTerminalReward,
  resolveTokenGrid,
  tokenCountsPerRow,
} from './layout.js';

// Two rows of length 4:   row 0 = [agent, agent, other, pad]   row 1 = [other, agent, other, agent]
const mask = Float32Array.from([1, 1, 0, 0, 0, 1, 0, 1]);

describe('resolveTokenGrid', () => {
  it('derives length from the mask size', () => {
    assert.deepEqual(resolveTokenGrid(mask, 2, 'test'), { rows: 2, length: 4 });
    assert.deepEqual(resolveTokenGrid(new Float32Array(0), 0, 'test'), { rows: 0, length: 0 });
  });

  it('rejects a mask that does not split into rows, or holds values other than 0/1', () => {
    assert.throws(() => resolveTokenGrid(mask, 3, 'test'), ShapeError);
    assert.throws(() => resolveTokenGrid(Float32Array.from([1, 0.5]), 1, 'test'), /only 0/);
    assert.throws(() => resolveTokenGrid(mask, -1, 'test'), ShapeError);
    assert.throws(() => resolveTokenGrid(mask, 0, 'test'), /rows is 0/);
  });
});

describe('tokenCountsPerRow', () => {
  it('counts the mask-1 tokens of each row', () => {
    assert.deepEqual([...tokenCountsPerRow({ mask, rows: 2 })], [2, 2]);
  });
});

describe('broadcastToTokens', () => {
  it('copies each row value onto its masked tokens and zeros elsewhere', () => {
    const out = broadcastToTokens({ perTrajectory: [0.5, -2], mask, rows: 2 });
    assert.deepEqual([...out], [0.5, 0.5, 0, 0, 0, -2, 0, -2]);
  });

  it('rejects a per-trajectory array of the wrong length', () => {
    assert.throws(() => broadcastToTokens({ perTrajectory: [1], mask, rows: 2 }), ShapeError);
  });
});

describe('placeTerminalReward', () => {
  it("puts each reward on the row's last masked token", () => {
    // Row 0's last agent token is position 1; row 1's is position 3. A row with no agent token
    // (row 2) receives nothing.
    const threeRows = Float32Array.from([...mask, 0, 0, 0, 0]);
    const out = placeTerminalReward({ rewards: [1, 3, 9], mask: threeRows, rows: 3 });
    assert.deepEqual([...out], [0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0]);
  });
});

describe('packedToGrid', () => {
  it('lays packed items on left-aligned padded rows', () => {
    // Items [a, b, c], [], [d]: longest 3.
    const grid = packedToGrid({ values: [1, 2, 3, 4], offsets: [0, 3, 3, 4] });
    assert.equal(grid.rows, 3);
    assert.equal(grid.length, 3);
    assert.deepEqual([...grid.values], [1, 2, 3, 0, 0, 0, 4, 0, 0]);
    assert.deepEqual([...grid.mask], [1, 1, 1, 0, 0, 0, 1, 0, 0]);
  });

  it('accepts a longer length and rejects bad offsets', () => {
    assert.equal(packedToGrid({ values: [1], offsets: [0, 1], length: 4 }).values.length, 4);
    assert.throws(() => packedToGrid({ values: [1, 2], offsets: [0, 1] }), ShapeError);
    assert.throws(() => packedToGrid({ values: [1, 2], offsets: [0, 2, 1, 2] }), /decrease/);
    assert.throws(() => packedToGrid({ values: [1, 2], offsets: [0, 2], length: 1 }), /shorter/);
  });
});
