import { scoreCompletionsKeepingHidden, type ScoringItem } from '../../../nn/score.js';
import {
  PrefixPass,
  planTrainingPrefixes,
  scoreAfterPrefixes,
  type TrainingPrefixPlan,
} from '../../../nn/shared-prefix-gradients.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { tidy } from '../../../tensor/index.js';
import { largest } from '../../../util/extremes.js';

/**
 * The forward and backward passes of a gradient step (gradient-step.ts), planned within its
 * activation budget. Items that begin with a prompt of their group share it
 * (shared-prefix-gradients.ts, on models that sum in one order): the prompt runs once and each
 * item runs its own tokens after it. Passes come in groups: a group runs its prefixes (none
 * for plain passes) and keeps their graph while its parts run, each part a forward pass and
 * its backward; the prefixes' backward follows the group's last part. A step within the budget
 * is one group of one part; a larger one runs a group per shared prompt, its items in parts
 * that fit the budget beside the prompt's activations. Sharing never plans more activations
 * than the plain passes would hold at their peak.
 */

export interface StepPasses {
  /** The shared prefixes, or null for plain passes. */
  plan: TrainingPrefixPlan | null;
  groups: Array<{
    /** Indices of plan.prefixes run before the group's parts (empty: plain passes). */
    prefixes: number[];
    /** Each part: indices of the items its pass runs, in the minibatch's scoring order. */
    parts: number[][];
  }>;
}

/**
 * The passes for `items` within `budget` bytes of activations: plain micro-batches
 * (microBatches), unless a plan of shared prefixes (planTrainingPrefixes; `share` false: never)
 * keeps every pass within the same bound, the budget or the plain passes' largest micro-batch
 * (an item over budget runs alone), whichever is larger.
 */
export function planStepPasses(
  model: TransformerLM,
  items: readonly ScoringItem[],
  budget: number,
  share = true,
): StepPasses {
  const all = items.map((_item, index) => index);
  const fitsPlain = fitsBudget(model, items, budget);
  const plainParts = consecutiveParts(all, fitsPlain);
  const plain: StepPasses = { plan: null, groups: [{ prefixes: [], parts: plainParts }] };
  const plan = share ? planTrainingPrefixes(model, items) : null;
  if (!plan) return plain;
  const fitsShared = (prefix: number) => (part: readonly number[]) =>
    partBytes(model, items, { plan, prefixes: [prefix], part }) <= budget;
  const groups: StepPasses['groups'] = [];
  if (plainParts.length === 1) {
    // Within the budget: every prefix, then every item in one pass.
    groups.push({ prefixes: plan.prefixes.map((_prefix, index) => index), parts: [all] });
  } else {
    plan.prefixes.forEach((_prefix, prefix) => {
      const members = all.filter((index) => plan.items[index]!.prefix === prefix);
      groups.push({ prefixes: [prefix], parts: consecutiveParts(members, fitsShared(prefix)) });
    });
    const alone = all.filter((index) => plan.items[index]!.prefix < 0);
    if (alone.length > 0) groups.push({ prefixes: [], parts: consecutiveParts(alone, fitsPlain) });
  }
  const shared = { plan, groups };
  const bound = Math.max(budget, peakActivationBytes(model, items, plain));
  return peakActivationBytes(model, items, shared) <= bound ? shared : plain;
}

/**
 * The largest estimate of activations the passes hold at once: a part's, with its group's
 * prefixes (whose graph lives while the group's parts run).
 */
export function peakActivationBytes(
  model: TransformerLM,
  items: readonly ScoringItem[],
  passes: StepPasses,
): number {
  return Math.max(
    ...passes.groups.flatMap(({ prefixes, parts }) =>
      parts.map((part) => partBytes(model, items, { plan: passes.plan, prefixes, part })),
    ),
  );
}

function partBytes(
  model: TransformerLM,
  items: readonly ScoringItem[],
  pass: { plan: TrainingPrefixPlan | null; prefixes: readonly number[]; part: readonly number[] },
): number {
  const { plan, prefixes, part } = pass;
  const partItems = part.map((index) => items[index]!);
  if (!plan || prefixes.length === 0) return activationBytes(model, partItems);
  const tokens = part.map((index) => plan.items[index]!.tokens);
  return (
    prefixActivationBytes(model, plan, prefixes) + itemActivationBytes(model, partItems, tokens)
  );
}

/** What a part's forward pass gives: its items' completion log-probs and final hidden states. */
export interface PartScores {
  /** [tokens] item by item; only valid during the `onPart` call. */
  logProbs: Float32Array;
  /** [tokens, hidden] */
  hidden: Float32Array;
}

/**
 * Runs the passes. For each part, `onPart` sees its forward pass and returns the gradient of
 * its log-probs, which its backward pass takes; null refuses the step: nothing further runs
 * (no backward of that part or of its group's prefixes) and this returns false.
 */
export function runStepPasses(
  model: TransformerLM,
  items: readonly ScoringItem[],
  passes: StepPasses,
  onPart: (part: readonly number[], scores: PartScores) => Float32Array | null,
): boolean {
  for (const { prefixes, parts } of passes.groups) {
    const completed = tidy(() => {
      const prefixPass = prefixes.length > 0 ? new PrefixPass(model, passes.plan!, prefixes) : null;
      for (const part of parts) {
        const partItems = part.map((index) => items[index]!);
        const stepped = tidy(() => {
          const scores = prefixPass
            ? scoreAfterPrefixes(
                model,
                partItems,
                part.map((index) => passes.plan!.items[index]!),
                prefixPass,
              )
            : scoreCompletionsKeepingHidden(model, partItems);
          const gradient = onPart(part, { logProbs: scores.logProbs.data, hidden: scores.hidden });
          if (!gradient) return false;
          scores.logProbs.backward(gradient);
          return true;
        });
        if (!stepped) return false;
      }
      prefixPass?.backward();
      return true;
    });
    if (!completed) return false;
  }
  return true;
}

/** Whether the plain pass over a part of `items` (indices) keeps at most `budget` bytes. */
function fitsBudget(
  model: TransformerLM,
  items: readonly ScoringItem[],
  budget: number,
): (part: readonly number[]) => boolean {
  return (part) =>
    activationBytes(
      model,
      part.map((index) => items[index]!),
    ) <= budget;
}

/** Consecutive runs of `indices` that `fits` (an index that fits alone nowhere runs alone). */
function consecutiveParts(
  indices: readonly number[],
  fits: (part: readonly number[]) => boolean,
): number[][] {
  const parts: number[][] = [];
  let current: number[] = [];
  for (const index of indices) {
    if (current.length > 0 && !fits([...current, index])) {
      parts.push(current);
      current = [];
    }
    current.push(index);
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

/**
 * Bytes a forward pass with gradients keeps for the backward pass on `items` packed into one
 * batch, estimated per position and layer: about a dozen hidden-size vectors (norms,
 * projections, residuals), four intermediate-size ones (gate, up, their product) and two rows
 * of attention weights per head; plus logits and their gradient at the completion positions.
 */
export function activationBytes(model: TransformerLM, items: readonly ScoringItem[]): number {
  const length = Math.max(
    1,
    largest(items, (item) => item.context.length + item.completion.length),
  );
  return passBytes(model, { rows: items.length, length, keys: length, items });
}

/** activationBytes of a pass of `rows` × `length` positions attending to `keys` slots. */
function passBytes(
  model: TransformerLM,
  pass: { rows: number; length: number; keys: number; items: readonly ScoringItem[] },
): number {
  const { hiddenSize, intermediateSize, heads, layers, vocabSize } = model.config;
  const perPosition = 12 * hiddenSize + 4 * intermediateSize + 2 * heads * pass.keys;
  const completions = pass.items.reduce((total, item) => total + item.completion.length, 0);
  return 4 * (pass.rows * pass.length * layers * perPosition + 2 * completions * vocabSize);
}

/** Keys and values of `positions` slots in every layer: a prefix's leaves, an item's joined keys. */
function keyValueBytes(model: TransformerLM, positions: number): number {
  const { layers, kvHeads, headDim } = model.config;
  return 4 * 2 * layers * kvHeads * headDim * positions;
}

/** activationBytes of a prefix pass over `prefixes` of `plan`, with its kept keys and values. */
function prefixActivationBytes(
  model: TransformerLM,
  plan: TrainingPrefixPlan,
  prefixes: readonly number[],
): number {
  const length = largest(prefixes, (prefix) => plan.prefixes[prefix]!.length);
  const rows = prefixes.length;
  return (
    passBytes(model, { rows, length, keys: length, items: [] }) +
    keyValueBytes(model, rows * length)
  );
}

/** activationBytes of a pass of items after their prefixes (`tokens` each), joined keys included. */
function itemActivationBytes(
  model: TransformerLM,
  items: readonly ScoringItem[],
  tokens: readonly number[],
): number {
  const before = Math.max(
    0,
    largest(tokens, (count) => count),
  );
  const length = Math.max(
    1,
    ...items.map((item, index) => item.context.length + item.completion.length - tokens[index]!),
  );
  const keys = before + length;
  return (
    passBytes(model, { rows: items.length, length, keys, items }) +
    keyValueBytes(model, items.length * keys)
  );
}

/** Consecutive items whose activations fit `budget` (an item that does not fit is its own). */
export function microBatches(
  model: TransformerLM,
  items: readonly ScoringItem[],
  budget: number,
): Array<{ items: ScoringItem[]; start: number; positions: number }> {
  const all = items.map((_item, index) => index);
  let start = 0;
  return consecutiveParts(all, fitsBudget(model, items, budget)).map((part) => {
    const partItems = part.map((index) => items[index]!);
    const positions = partItems.reduce((total, item) => total + item.completion.length, 0);
    start += positions;
    return { items: partItems, start: start - positions, positions };
  });
}
