import type { ScoringItem } from '../../nn/score.js';
import type { TeamBatch } from '../../team/types.js';

/**
 * The tokens of one update unit (one agent, or every agent sharing one model) in a batch, in
 * the two layouts the code needs: scoring items (one per turn, for the model) and the padded
 * [rows, length] grid of src/rl (row r = trajectory `rowTrajectories[r]`, its positions = the
 * unit's tokens in speaking order).
 */
export interface UnitTokens {
  rows: number;
  length: number;
  /** Trajectory index (in the batch) of each row. */
  rowTrajectories: number[];
  /** [rows·length] 1 where the unit emitted a token. */
  mask: Float32Array;
  /** [rows·length] log-probs recorded at sampling. */
  oldLogProbs: Float32Array;
  /** One per turn of the unit, row by row. */
  items: ScoringItem[];
  /** Grid index of every scored token, in item order (flat scoring order → grid). */
  gridIndex: Int32Array;
  totalTokens: number;
  /**
   * Per item, the final hidden states [tokens, hidden] that predicted its tokens while it was
   * sampled (TurnRecord.hiddenStates), or null when the sampler did not keep them.
   */
  sampledHidden: Array<Float32Array | null>;
}

export function collectUnitTokens(
  batch: TeamBatch,
  agentIndices: readonly number[],
  rowTrajectories?: readonly number[],
): UnitTokens {
  const members = new Set(agentIndices);
  const selected = rowTrajectories ?? batch.trajectories.map((_trajectory, index) => index);
  const turnsPerRow = selected.map((trajectoryIndex) =>
    batch.trajectories[trajectoryIndex]!.turns.filter((turn) => members.has(turn.agentIndex)),
  );
  const length = Math.max(
    1,
    ...turnsPerRow.map((turns) => turns.reduce((total, turn) => total + turn.tokens.length, 0)),
  );
  const rows = selected.length;
  const mask = new Float32Array(rows * length);
  const oldLogProbs = new Float32Array(rows * length);
  const items: ScoringItem[] = [];
  const sampledHidden: Array<Float32Array | null> = [];
  const gridIndex: number[] = [];
  turnsPerRow.forEach((turns, row) => {
    let position = 0;
    for (const turn of turns) {
      items.push({ context: turn.inputIds, completion: turn.tokens });
      sampledHidden.push(turn.hiddenStates ?? null);
      turn.tokens.forEach((_token, offset) => {
        const index = row * length + position;
        mask[index] = 1;
        oldLogProbs[index] = turn.logProbs[offset]!;
        gridIndex.push(index);
        position++;
      });
    }
  });
  return {
    rows,
    length,
    rowTrajectories: [...selected],
    mask,
    oldLogProbs,
    items,
    gridIndex: Int32Array.from(gridIndex),
    totalTokens: gridIndex.length,
    sampledHidden,
  };
}

/** Scatters values in flat scoring order into a zeroed [rows·length] grid. */
export function toGrid(tokens: UnitTokens, flat: ArrayLike<number>): Float32Array {
  const grid = new Float32Array(tokens.rows * tokens.length);
  for (let index = 0; index < tokens.totalTokens; index++)
    grid[tokens.gridIndex[index]!] = flat[index]!;
  return grid;
}

/** Gathers grid values back into flat scoring order. */
export function fromGrid(tokens: UnitTokens, grid: ArrayLike<number>): Float32Array {
  const flat = new Float32Array(tokens.totalTokens);
  for (let index = 0; index < tokens.totalTokens; index++)
    flat[index] = grid[tokens.gridIndex[index]!]!;
  return flat;
}

/** Per-row values from per-trajectory values. */
export function rowValues(tokens: UnitTokens, perTrajectory: ArrayLike<number>): Float64Array {
  return Float64Array.from(
    tokens.rowTrajectories,
    (trajectoryIndex) => perTrajectory[trajectoryIndex]!,
  );
}

/**
 * Where each scored token of `part` sits in `whole`'s flat scoring order, `part` being some of
 * `whole`'s rows (a minibatch of the unit's tokens: its rows are whole trajectories, their
 * positions the same tokens in the same order).
 */
export function flatPositionsIn(whole: UnitTokens, part: UnitTokens): Int32Array {
  const flatOfGrid = new Int32Array(whole.rows * whole.length).fill(-1);
  whole.gridIndex.forEach((grid, flat) => (flatOfGrid[grid] = flat));
  const wholeRow = new Map(whole.rowTrajectories.map((trajectory, row) => [trajectory, row]));
  return part.gridIndex.map((grid) => {
    const row = wholeRow.get(part.rowTrajectories[Math.floor(grid / part.length)]!)!;
    return flatOfGrid[row * whole.length + (grid % part.length)]!;
  });
}
