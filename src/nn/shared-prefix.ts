import { largest } from '../util/extremes.js';
import { fitsMemoryBound } from '../util/memory-bound.js';

/**
 * Prompts of one generate batch often begin alike: a group's trajectories share their prompt,
 * and later turns share it up to the first sampled turn. The keys and values of a token depend
 * only on the tokens before it and its position — every kernel of the forward pass computes a
 * row alone, in one summation order whatever else is in the batch, and attention skips left
 * padding (native/src/attention.c) — so a prefix common to several rows can be prefilled once
 * and its cache rows copied, with the very bits each row would have computed itself.
 *
 * All rows of the cache advance together, so the plan is: a first pass over a few *leader* rows
 * fills slots before a common slot `start`; every row copies the keys and values of those slots
 * from its leader (whose prompt begins with the same tokens); then the whole batch runs
 * [start, promptLength) as before.
 */

/** Who computes the slots before `start`, and who copies them from whom. */
export interface SharedPrefixPlan {
  /** The first prompt slot every row computes itself (< promptLength). */
  start: number;
  /** Batch rows run in the first pass, with how many of their prompt tokens. */
  leaders: Array<{ row: number; tokens: number }>;
  /** Each row with tokens before `start`: the first `tokens` of its prompt are `leader`'s. */
  copies: Array<{ row: number; leader: number; tokens: number }>;
}

/** Positions (rows × slots) of a plan's two passes, or of the plain prefill (`plan` null). */
export function prefillPositions(
  plan: SharedPrefixPlan | null,
  batch: number,
  promptLength: number,
): number {
  if (!plan) return batch * promptLength;
  const leaderLength = largest(plan.leaders, (leader) => leader.tokens);
  return plan.leaders.length * leaderLength + batch * (promptLength - plan.start);
}

function commonPrefixLength(left: readonly number[], right: readonly number[]): number {
  const limit = Math.min(left.length, right.length);
  let length = 0;
  while (length < limit && left[length] === right[length]) length++;
  return length;
}

/**
 * For one `start`: rows in order; a row needing tokens before `start` copies them from the first
 * leader whose prompt begins with them, or becomes a leader itself.
 */
function planFor(
  prompts: readonly (readonly number[])[],
  promptLength: number,
  start: number,
  sharedPrefix: (row: number, other: number) => number,
): SharedPrefixPlan | null {
  const leaders: Array<{ row: number; tokens: number }> = [];
  const copies: Array<{ row: number; leader: number; tokens: number }> = [];
  for (const [row, prompt] of prompts.entries()) {
    const needed = start - (promptLength - prompt.length);
    if (needed <= 0) continue;
    // A row may keep its own tokens out of the first pass (its hidden states are wanted).
    if (needed > sharedPrefix(row, row)) return null;
    let leader = leaders.findIndex((candidate) => sharedPrefix(row, candidate.row) >= needed);
    if (leader < 0) {
      leader = leaders.length;
      leaders.push({ row, tokens: needed });
    }
    leaders[leader]!.tokens = Math.max(leaders[leader]!.tokens, needed);
    copies.push({ row, leader, tokens: needed });
  }
  return { start, leaders, copies };
}

/** Rows a plan is made for: a 64 MiB table and 16.8 million prefix comparisons at most. */
export const maxPlannedRows = 4096;

/**
 * The plan with the fewest prefill positions for left-padded `prompts` (each row's prompt ends
 * at slot promptLength − 1), or null when sharing would not save at least `minimumSaving` of
 * them (a fraction; the first pass has a fixed cost of its own). `shareable[row]`: how many of
 * a row's first tokens may be left to the first pass (default all but the last); scoring keeps
 * the tokens whose hidden states it reads out of it.
 */
export function planSharedPrefix(
  prompts: readonly (readonly number[])[],
  promptLength: number,
  minimumSaving = 0.1,
  shareable?: readonly number[],
): SharedPrefixPlan | null {
  const batch = prompts.length;
  if (batch < 2 || promptLength < 2) return null;
  // The table below holds rows² integers and costs rows² prefix comparisons: past
  // maxPlannedRows (or the memory bound) the prefill runs unshared, the same bits without the
  // saving, instead of dying on "Invalid typed array length" at 80,000 rows.
  if (batch > maxPlannedRows || !fitsMemoryBound(4 * batch * batch, batch * batch)) return null;
  const shared = new Int32Array(batch * batch);
  for (let row = 0; row < batch; row++)
    for (let other = 0; other < row; other++) {
      const length = commonPrefixLength(prompts[row]!, prompts[other]!);
      shared[row * batch + other] = length;
      shared[other * batch + row] = length;
    }
  const limit = (row: number) => shareable?.[row] ?? prompts[row]!.length;
  const sharedPrefix = (row: number, other: number) =>
    row === other ? limit(row) : Math.min(shared[row * batch + other]!, limit(row), limit(other));
  const plain = batch * promptLength;
  let best: SharedPrefixPlan | null = null;
  let bestPositions = plain * (1 - minimumSaving);
  // The last slot stays in the batch pass: it gives every row's first logits.
  for (let start = 1; start < promptLength; start++) {
    const plan = planFor(prompts, promptLength, start, sharedPrefix);
    if (!plan || plan.leaders.length === 0) continue;
    const positions = prefillPositions(plan, batch, promptLength);
    if (positions < bestPositions) {
      best = plan;
      bestPositions = positions;
    }
  }
  return best;
}
