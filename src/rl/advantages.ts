/**
 * Per-trajectory advantages from the team reward, without a critic: GRPO's group-relative
 * advantage (DeepSeekMath, Shao et al. 2024), the leave-one-out baseline (RLOO, Ahmadian et al.
 * 2024), Dr. MAS's agent-wise normalization (Feng et al. 2026) and DAPO's dynamic-sampling
 * filter (Yu et al. 2025). A "group" is the G trajectories sampled from one prompt; group ids are
 * arbitrary integers and members need not be contiguous.
 */
import { ShapeError, TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';

/** Indices of the members of each group, in first-appearance order of the groups. */
function membersByGroup(groupIds: NumberArray, caller: string): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (let index = 0; index < groupIds.length; index++) {
    const id = groupIds[index];
    if (!Number.isInteger(id)) {
      throw new ShapeError(`${caller}: groupIds[${index}] is ${id}; group ids must be integers`);
    }
    const members = groups.get(id);
    if (members) members.push(index);
    else groups.set(id, [index]);
  }
  return groups;
}

function expectSameLength(a: NumberArray, b: NumberArray, names: string, caller: string): void {
  if (a.length !== b.length) {
    throw new ShapeError(
      `${caller}: ${names} must have one entry per trajectory (got ${a.length} and ${b.length})`,
    );
  }
}

/**
 * How both normalizations below standardize a set of values: centred on their mean, then, with
 * normalizeStd, divided by their standard deviation plus epsilon (which standard deviation is
 * each function's own: GRPO's sample one, Dr. MAS's weighted one).
 */
export interface Standardization {
  /** Divide by the standard deviation; false only centres. @default true */
  normalizeStd?: boolean;
  /** Added to the standard deviation before dividing. @default 1e-6 */
  epsilon?: number;
}

/** The factor a centred value is multiplied by: 1 / (σ + epsilon), or 1 without normalizeStd. */
function standardScale(
  { normalizeStd = true, epsilon = 1e-6 }: Standardization,
  standardDeviation: number,
): number {
  return normalizeStd ? 1 / (standardDeviation + epsilon) : 1;
}

export interface GrpoAdvantagesResult {
  /** [trajectories] */
  advantages: Float64Array;
  metrics: {
    groupCount: number;
    /** Groups of one trajectory: no baseline exists, their advantage is 0. */
    singletonGroupCount: number;
    /** Groups (size ≥ 2) whose rewards are all equal: every advantage in them is 0. */
    uniformGroupCount: number;
    rewardMean: number;
    advantageAbsoluteMax: number;
  };
}

/**
 * GRPO group-relative advantages. For trajectory j in group g with n ≥ 2 members, rewards r,
 * mean μ_g and sample standard deviation σ_g = √(Σ(r − μ_g)² / (n − 1)):
 *
 *   baseline b_j = μ_g                              (leaveOneOut = false)
 *   baseline b_j = (Σ_g r − r_j) / (n − 1)          (leaveOneOut = true; = r_j − n/(n−1)·(r_j − μ_g))
 *   A_j = (r_j − b_j) / (σ_g + epsilon)             (normalizeStd = true)
 *   A_j =  r_j − b_j                                (normalizeStd = false)
 *
 * Groups of size 1 get A = 0 (counted in `singletonGroupCount`). Adding a constant to every
 * reward of a group leaves its advantages unchanged; with normalizeStd, so does scaling them by a
 * positive factor (up to epsilon).
 */
export function grpoAdvantages({
  rewards,
  groupIds,
  leaveOneOut = false,
  ...standardization
}: {
  /** [trajectories] team reward of each trajectory. */
  rewards: NumberArray;
  /** [trajectories] the prompt group of each trajectory. */
  groupIds: NumberArray;
  /** Baseline = mean of the OTHER members of the group. @default false */
  leaveOneOut?: boolean;
} & Standardization): GrpoAdvantagesResult {
  expectSameLength(rewards, groupIds, 'rewards and groupIds', 'grpoAdvantages');
  const advantages = new Float64Array(rewards.length);
  const groups = membersByGroup(groupIds, 'grpoAdvantages');
  let singletonGroupCount = 0;
  let uniformGroupCount = 0;
  for (const members of groups.values()) {
    const size = members.length;
    if (size === 1) {
      singletonGroupCount++;
      continue;
    }
    // Exact equality, not a zero variance: a rounded mean of equal rewards can differ from them.
    if (members.every((index) => rewards[index] === rewards[members[0]])) {
      uniformGroupCount++;
      continue;
    }
    let sum = 0;
    for (const index of members) sum += rewards[index];
    const mean = sum / size;
    let squares = 0;
    for (const index of members) squares += (rewards[index] - mean) ** 2;
    const standardDeviation = Math.sqrt(squares / (size - 1));
    const scale = standardScale(standardization, standardDeviation);
    for (const index of members) {
      const baseline = leaveOneOut ? (sum - rewards[index]) / (size - 1) : mean;
      advantages[index] = (rewards[index] - baseline) * scale;
    }
  }
  let rewardSum = 0;
  let advantageAbsoluteMax = 0;
  for (let index = 0; index < rewards.length; index++) {
    rewardSum += rewards[index];
    advantageAbsoluteMax = Math.max(advantageAbsoluteMax, Math.abs(advantages[index]));
  }
  return {
    advantages,
    metrics: {
      groupCount: groups.size,
      singletonGroupCount,
      uniformGroupCount,
      rewardMean: rewards.length > 0 ? rewardSum / rewards.length : Number.NaN,
      advantageAbsoluteMax,
    },
  };
}

export interface AgentWiseNormalizeResult {
  /** [samples] */
  normalized: Float64Array;
  /** One entry per (agent, group) cell, in first-appearance order. */
  statistics: {
    agentId: number;
    groupId: number | null;
    mean: number;
    standardDeviation: number;
    weight: number;
  }[];
}

/**
 * Dr. MAS agent-wise normalization: each agent's values are centred and scaled with that agent's
 * OWN statistics instead of one statistic shared by all agents.
 *
 * A sample s is one action step of one agent (in TeamTR: one turn of one agent in one
 * trajectory) carrying a value v_s (the team reward of its trajectory, or a raw advantage), an
 * agent id a_s, optionally a group id g_s and a weight w_s ≥ 0 (1 = each step counts once, as in
 * Dr. MAS; the step's token count = statistics over tokens). For each cell c = (agent, group)
 * (or agent alone when groupIds is omitted), with W_c = Σ_{s∈c} w_s:
 *
 *   μ_c = Σ_{s∈c} w_s·v_s / W_c
 *   σ_c = √( Σ_{s∈c} w_s·(v_s − μ_c)² / W_c )        (population / weighted form)
 *   out_s = (v_s − μ_c) / (σ_c + epsilon)             (normalizeStd = true)
 *   out_s =  v_s − μ_c                                (normalizeStd = false)
 *
 * Samples of weight 0 do not enter the statistics but are still normalized with them; a cell of
 * total weight 0, or whose weighted values are all equal, gets 0.
 */
export function agentWiseNormalize({
  values,
  agentIds,
  groupIds,
  weights,
  ...standardization
}: {
  /** [samples] */
  values: NumberArray;
  /** [samples] integer agent index of each sample. */
  agentIds: NumberArray;
  /** [samples] prompt group; omit for statistics over the agent's whole batch. */
  groupIds?: NumberArray;
  /** [samples] non-negative weights. @default all 1 */
  weights?: NumberArray;
} & Standardization): AgentWiseNormalizeResult {
  const caller = 'agentWiseNormalize';
  expectSameLength(values, agentIds, 'values and agentIds', caller);
  if (groupIds) expectSameLength(values, groupIds, 'values and groupIds', caller);
  if (weights) expectSameLength(values, weights, 'values and weights', caller);
  const weightOf = (index: number) => (weights ? weights[index] : 1);
  for (let index = 0; index < values.length; index++) {
    const weight = weightOf(index);
    if (!(weight >= 0) || !Number.isFinite(weight)) {
      throw new TeamtrError(
        `${caller}: weights[${index}] is ${weight}; weights must be finite and ≥ 0`,
      );
    }
  }
  const normalized = new Float64Array(values.length);
  const statistics: AgentWiseNormalizeResult['statistics'] = [];
  for (const { agentId, groupId, members } of agentCells(agentIds, groupIds, caller)) {
    const weighted = members.filter((index) => weightOf(index) > 0);
    let totalWeight = 0;
    let weightedSum = 0;
    for (const index of weighted) {
      totalWeight += weightOf(index);
      weightedSum += weightOf(index) * values[index];
    }
    const mean = totalWeight > 0 ? weightedSum / totalWeight : 0;
    let weightedSquares = 0;
    for (const index of weighted) weightedSquares += weightOf(index) * (values[index] - mean) ** 2;
    const standardDeviation = totalWeight > 0 ? Math.sqrt(weightedSquares / totalWeight) : 0;
    statistics.push({ agentId, groupId, mean, standardDeviation, weight: totalWeight });
    // Exact equality (also true for an empty cell): a rounded mean of equal values can differ.
    if (weighted.every((index) => values[index] === values[weighted[0]])) continue;
    const scale = standardScale(standardization, standardDeviation);
    for (const index of members) normalized[index] = (values[index] - mean) * scale;
  }
  return { normalized, statistics };
}

/** Samples grouped by (agent, group), or by agent when there are no group ids. */
function agentCells(
  agentIds: NumberArray,
  groupIds: NumberArray | undefined,
  caller: string,
): { agentId: number; groupId: number | null; members: number[] }[] {
  const cells = new Map<string, { agentId: number; groupId: number | null; members: number[] }>();
  for (let index = 0; index < agentIds.length; index++) {
    const agentId = agentIds[index];
    const groupId = groupIds ? groupIds[index] : null;
    if (!Number.isInteger(agentId) || (groupId !== null && !Number.isInteger(groupId))) {
      throw new ShapeError(`${caller}: agent and group ids must be integers (sample ${index})`);
    }
    const key = `${agentId}:${groupId}`;
    const cell = cells.get(key);
    if (cell) cell.members.push(index);
    else cells.set(key, { agentId, groupId, members: [index] });
  }
  return [...cells.values()];
}

export interface DynamicSamplingResult {
  /** Ascending indices of the trajectories in kept groups. */
  keptIndices: Int32Array;
  /** Group ids kept, in first-appearance order. */
  keptGroupIds: number[];
  keptGroupCount: number;
  droppedGroupCount: number;
  keptTrajectoryCount: number;
  droppedTrajectoryCount: number;
}

/**
 * DAPO dynamic sampling: keep only groups whose rewards are not all equal (max − min > tolerance).
 * An all-equal group has zero group-relative advantage everywhere and contributes no gradient,
 * only noise to the token count. Singleton groups are dropped (trivially all equal).
 */
export function dynamicSamplingFilter({
  rewards,
  groupIds,
  tolerance = 0,
}: {
  /** [trajectories] */
  rewards: NumberArray;
  /** [trajectories] */
  groupIds: NumberArray;
  /** Rewards closer than this count as equal. @default 0 */
  tolerance?: number;
}): DynamicSamplingResult {
  expectSameLength(rewards, groupIds, 'rewards and groupIds', 'dynamicSamplingFilter');
  const groups = membersByGroup(groupIds, 'dynamicSamplingFilter');
  const kept: number[] = [];
  const keptGroupIds: number[] = [];
  for (const [groupId, members] of groups) {
    let low = Infinity;
    let high = -Infinity;
    for (const index of members) {
      low = Math.min(low, rewards[index]);
      high = Math.max(high, rewards[index]);
    }
    if (high - low > tolerance) {
      keptGroupIds.push(groupId);
      kept.push(...members);
    }
  }
  const keptIndices = Int32Array.from(kept).sort();
  return {
    keptIndices,
    keptGroupIds,
    keptGroupCount: keptGroupIds.length,
    droppedGroupCount: groups.size - keptGroupIds.length,
    keptTrajectoryCount: keptIndices.length,
    droppedTrajectoryCount: rewards.length - keptIndices.length,
  };
}
