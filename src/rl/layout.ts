/**
 * The token layout every function in src/rl shares, plus small helpers over it.
 *
 * A batch of trajectories for ONE agent is a padded grid `[rows, length]`, row-major: row r is
 * trajectory r, the value of position t of row r sits at index `r * length + t`. This is the
 * layout of the model's scoring output (one log-probability per position of each padded row).
 * Alongside it travels a `mask` of the same shape:
 *
 *   mask[r * length + t] = 1   the agent emitted this token (it carries the agent's gradient)
 *   mask[r * length + t] = 0   another agent's token, prompt, or padding
 *
 * Masks hold only 0 and 1. Values at mask-0 positions are never read arithmetically: they may be
 * anything (even NaN) without changing any result, and outputs are 0 there. Per-trajectory
 * values (rewards, advantages) are arrays of length `rows`. `length` is never passed: it is
 * `mask.length / rows`, checked to be an integer.
 */
import { ShapeError } from '../util/errors.js';

/** Any readable array of numbers: `number[]`, `Float32Array`, `Float64Array`, `Int32Array`… */
export type NumberArray = ArrayLike<number>;

/** The shape of a padded token grid. */
export interface TokenGrid {
  /** Trajectories. */
  rows: number;
  /** Padded positions per trajectory. */
  length: number;
}

/**
 * Checks a mask against its row count and returns the grid shape. Throws ShapeError when the mask
 * does not split into `rows` equal rows or holds a value other than 0 or 1.
 */
export function resolveTokenGrid(mask: NumberArray, rows: number, caller: string): TokenGrid {
  if (!Number.isInteger(rows) || rows < 0) {
    throw new ShapeError(`${caller}: rows must be a non-negative integer, got ${rows}`);
  }
  if (rows === 0) {
    if (mask.length !== 0) {
      throw new ShapeError(`${caller}: rows is 0 but mask has ${mask.length} entries`);
    }
    return { rows: 0, length: 0 };
  }
  const length = mask.length / rows;
  if (!Number.isInteger(length)) {
    throw new ShapeError(
      `${caller}: mask has ${mask.length} entries, not a multiple of rows (${rows}); ` +
        'pass the padded [rows, length] grid flattened row-major',
    );
  }
  for (let index = 0; index < mask.length; index++) {
    const value = mask[index];
    if (value !== 0 && value !== 1) {
      throw new ShapeError(
        `${caller}: mask[${index}] is ${value}; masks hold only 0 (not this agent's token) and 1`,
      );
    }
  }
  return { rows, length };
}

/** Throws ShapeError unless `values` has exactly `expected` entries. */
export function expectLength(
  values: NumberArray,
  expected: number,
  name: string,
  caller: string,
): void {
  if (values.length !== expected) {
    throw new ShapeError(
      `${caller}: ${name} has ${values.length} entries, expected ${expected} (same shape as the mask)`,
    );
  }
}

/** Number of mask-1 tokens in each row: `[rows]`. */
export function tokenCountsPerRow({
  mask,
  rows,
}: {
  /** [rows, length] */
  mask: NumberArray;
  rows: number;
}): Int32Array {
  const { length } = resolveTokenGrid(mask, rows, 'tokenCountsPerRow');
  const counts = new Int32Array(rows);
  for (let row = 0; row < rows; row++) {
    let count = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) count++;
    }
    counts[row] = count;
  }
  return counts;
}

/**
 * Copies a per-trajectory value onto each of that trajectory's masked tokens:
 * `out[r, t] = perTrajectory[r]` where `mask[r, t] = 1`, else 0. Used to turn GRPO's
 * per-trajectory advantage into the per-token advantage the losses take.
 */
export function broadcastToTokens({
  perTrajectory,
  mask,
  rows,
}: {
  /** [rows] */
  perTrajectory: NumberArray;
  /** [rows, length] */
  mask: NumberArray;
  rows: number;
}): Float32Array {
  const { length } = resolveTokenGrid(mask, rows, 'broadcastToTokens');
  expectLength(perTrajectory, rows, 'perTrajectory', 'broadcastToTokens');
  const out = new Float32Array(rows * length);
  for (let row = 0; row < rows; row++) {
    const value = perTrajectory[row];
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) out[position] = value;
    }
  }
  return out;
}

/**
 * Puts each trajectory's reward on the agent's LAST masked token of that row (0 elsewhere): the
 * per-token reward a value head / GAE expects when the team reward arrives at the end of the
 * episode. A row without masked tokens gets nothing (the agent did not act, so no step of its
 * MDP can receive the reward).
 */
export function placeTerminalReward({
  rewards,
  mask,
  rows,
}: {
  /** [rows] */
  rewards: NumberArray;
  /** [rows, length] */
  mask: NumberArray;
  rows: number;
}): Float32Array {
  const { length } = resolveTokenGrid(mask, rows, 'placeTerminalReward');
  expectLength(rewards, rows, 'rewards', 'placeTerminalReward');
  const out = new Float32Array(rows * length);
  for (let row = 0; row < rows; row++) {
    for (let position = (row + 1) * length - 1; position >= row * length; position--) {
      if (mask[position] === 1) {
        out[position] = rewards[row];
        break;
      }
    }
  }
  return out;
}

/**
 * Packed → padded: the scorer returns each item's values back to back (`offsets[i]` = start of
 * item i, `offsets[items]` = total); this lays item i on row i, left-aligned, with mask 1 on its
 * values. `length` defaults to the longest item.
 */
export function packedToGrid({
  values,
  offsets,
  length,
}: {
  /** [total] */
  values: NumberArray;
  /** [items + 1], non-decreasing, offsets[0] = 0, offsets[items] = values.length. */
  offsets: NumberArray;
  length?: number;
}): { values: Float32Array; mask: Float32Array; rows: number; length: number } {
  const rows = offsets.length - 1;
  if (rows < 0 || offsets[0] !== 0 || offsets[rows] !== values.length) {
    throw new ShapeError(
      `packedToGrid: offsets must start at 0 and end at values.length (${values.length})`,
    );
  }
  let longest = 0;
  for (let row = 0; row < rows; row++) {
    const size = offsets[row + 1] - offsets[row];
    if (!(size >= 0)) throw new ShapeError(`packedToGrid: offsets decrease at item ${row}`);
    longest = Math.max(longest, size);
  }
  const width = length ?? longest;
  if (width < longest) {
    throw new ShapeError(
      `packedToGrid: length ${width} is shorter than the longest item (${longest})`,
    );
  }
  const grid = new Float32Array(rows * width);
  const mask = new Float32Array(rows * width);
  for (let row = 0; row < rows; row++) {
    for (let index = offsets[row]; index < offsets[row + 1]; index++) {
      const position = row * width + index - offsets[row];
      grid[position] = values[index];
      mask[position] = 1;
    }
  }
  return { values: grid, mask, rows, length: width };
}

/** Checks [positions, vocab] full-distribution arrays (log-probabilities over the vocabulary). */
export function checkVocabularyRows(
  arrays: { name: string; values: NumberArray }[],
  positions: number,
  vocab: number,
  caller: string,
): void {
  if (!Number.isInteger(positions) || positions < 0 || !Number.isInteger(vocab) || vocab < 1) {
    throw new ShapeError(
      `${caller}: positions (${positions}) and vocab (${vocab}) must be integers, vocab ≥ 1`,
    );
  }
  for (const { name, values } of arrays) {
    if (values.length !== positions * vocab) {
      throw new ShapeError(
        `${caller}: ${name} has ${values.length} entries, expected positions × vocab = ${positions} × ${vocab}`,
      );
    }
  }
}
