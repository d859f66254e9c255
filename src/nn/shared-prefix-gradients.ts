import {
  backwardFrom,
  gatherLogProbs,
  prependRows,
  selectRows,
  type Tensor,
} from '../tensor/index.js';
import { ShapeError } from '../util/errors.js';
import { padPrompts } from './prefill.js';
import type { ScoringItem } from './score.js';
import { planSharedPrefix } from './shared-prefix.js';
import { sumsInOneOrder } from './shared-prefix-scoring.js';
import type { LayerKeysValues, TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';

/**
 * Shared-prefix scoring (shared-prefix-scoring.ts) for a gradient step: a prompt that several
 * items begin with runs through the layers once, with gradients, and each item then runs only
 * its own tokens, attending to the prefix's keys and values before its own. No KV cache: the
 * prefix pass keeps each layer's keys and values in the graph, and every item's pass gathers
 * them (prependRows), so the backward of the gather sums each prefix key's gradient over the
 * items that attended to it before it flows once through the prefix's layers.
 *
 * The forward pass is the plain one's bit for bit on a model that sums in one order
 * (sumsInOneOrder): every row is computed alone, a prefix row by the very operations it would
 * meet in each item's pass, and attention loops over a query's keys from its sequence's first
 * real one (left padding is skipped), with the prefix's keys directly before the item's own.
 * The gradients are summed in another order (a prefix row's once over its items, then through
 * the layers, instead of per item), so they move in their last bits.
 */

/** Which prefix each item begins with, for a batch of items. */
export interface TrainingPrefixPlan {
  /** The prefixes computed once: each the first tokens of one of the items. */
  prefixes: number[][];
  /** Per item: the prefix its first `tokens` tokens are (prefix −1, tokens 0: none). */
  items: Array<{ prefix: number; tokens: number }>;
}

/**
 * The shared prefixes of `items` as the scoring passes plan them (planSharedPrefix, saving at
 * least a tenth of the positions, each item's last context token kept its own since its hidden
 * state predicts the first completion token); null on a model that does not sum in one order,
 * or when no plan saves enough.
 */
export function planTrainingPrefixes(
  model: TransformerLM,
  items: readonly ScoringItem[],
): TrainingPrefixPlan | null {
  if (!sumsInOneOrder(model) || items.length < 2) return null;
  if (items.some((item) => item.context.length === 0)) return null; // the plain pass says why
  const sequences = items.map((item) => [...item.context, ...item.completion]);
  const length = largest(sequences, (sequence) => sequence.length);
  const shareable = items.map((item) => item.context.length - 1);
  const plan = planSharedPrefix(sequences, length, 0.1, shareable);
  if (!plan) return null;
  const entries = items.map(() => ({ prefix: -1, tokens: 0 }));
  for (const { row, leader, tokens } of plan.copies) entries[row] = { prefix: leader, tokens };
  return {
    prefixes: plan.leaders.map(({ row, tokens }) => sequences[row]!.slice(0, tokens)),
    items: entries,
  };
}

/**
 * Some of a plan's prefixes through the layers with gradients (left-padded into one batch),
 * each layer's keys and values kept. Item passes attend to detached copies of them (`leaves`),
 * which gather the items' gradients across any number of passes; `backward` then takes those
 * through the prefixes' layers once.
 */
export class PrefixPass {
  private readonly rowOf = new Map<number, number>();
  private readonly width: number;
  private readonly computed: Array<{ key: Tensor; value: Tensor }> = [];
  private readonly leaves: Array<{ key: Tensor; value: Tensor }> = [];

  constructor(
    model: TransformerLM,
    private readonly plan: TrainingPrefixPlan,
    prefixes: readonly number[],
  ) {
    const tokens = prefixes.map((prefix) => plan.prefixes[prefix]!);
    prefixes.forEach((prefix, row) => this.rowOf.set(prefix, row));
    this.width = largest(tokens, (prefix) => prefix.length);
    const padded = padPrompts(tokens, {
      promptLength: this.width,
      capacity: this.width,
      padId: 0,
      chunkPositions: tokens.length * this.width,
    });
    const keeping: LayerKeysValues = {
      before: 0,
      attend: (layerIndex, key, value) => {
        this.computed[layerIndex] = { key, value };
        this.leaves[layerIndex] = { key: leafCopy(key), value: leafCopy(value) };
        return { key, value };
      },
    };
    model.forwardHidden({
      ids: padded.ids,
      batch: tokens.length,
      length: this.width,
      positions: padded.positions,
      keyMask: padded.keyMask,
      keysValues: keeping,
    });
  }

  /**
   * The keys and values a pass over items (their plan entries, in batch order) attends to:
   * `before` slots holding each item's prefix tokens right-aligned (left padding, masked, before
   * them), then the pass's own.
   */
  keysValuesFor(entries: ReadonlyArray<{ prefix: number; tokens: number }>): LayerKeysValues {
    const before = Math.max(
      0,
      largest(entries, (entry) => entry.tokens),
    );
    const sources = new Int32Array(entries.length * before).fill(-1);
    entries.forEach(({ prefix, tokens }, item) => {
      if (tokens === 0) return;
      const row = this.rowOf.get(prefix);
      if (row === undefined) throw new ShapeError(`prefix ${prefix} is not in this prefix pass`);
      // The prefix's tokens sit right-aligned in its row of this pass.
      const first = row * this.width + this.width - this.plan.prefixes[prefix]!.length;
      for (let token = 0; token < tokens; token++)
        sources[item * before + before - tokens + token] = first + token;
    });
    return {
      before,
      attend: (layerIndex, key, value) => {
        const kept = this.leaves[layerIndex]!;
        return {
          key: prependRows(kept.key, sources, key),
          value: prependRows(kept.value, sources, value),
        };
      },
    };
  }

  /** Backward through the prefixes' layers from the key and value gradients gathered so far. */
  backward(): void {
    const roots = this.computed.flatMap((layer, index) => {
      const leaves = this.leaves[index]!;
      return [
        { tensor: layer.key, gradient: leaves.key.grad },
        { tensor: layer.value, gradient: leaves.value.grad },
      ].filter((root): root is { tensor: Tensor; gradient: Float32Array } => !!root.gradient);
    });
    if (roots.length > 0) backwardFrom(roots);
  }
}

/**
 * A copy of `tensor` outside the graph that collects a gradient of its own if `tensor` takes
 * one (the first layer's keys do not when only adapters train and the key projection has none).
 */
function leafCopy(tensor: Tensor): Tensor {
  const leaf = tensor.detach();
  leaf.requiresGrad = tensor.requiresGrad;
  return leaf;
}

/**
 * scoreCompletionsKeepingHidden (score.ts) for items whose first tokens a prefix pass ran: each
 * item's pass runs its tokens from its `tokens`-th on, after its prefix's keys and values, and
 * the same final hidden states, LM head and gather give its completion's log-probs. Entries are
 * the items' plan entries; an item without a prefix (tokens 0) runs whole.
 */
export function scoreAfterPrefixes(
  model: TransformerLM,
  items: readonly ScoringItem[],
  entries: ReadonlyArray<{ prefix: number; tokens: number }>,
  prefixes: PrefixPass,
): { logProbs: Tensor; hidden: Float32Array } {
  const keysValues = prefixes.keysValuesFor(entries);
  const { before } = keysValues;
  const own = items.map((item, index) =>
    [...item.context, ...item.completion].slice(entries[index]!.tokens),
  );
  const length = Math.max(
    1,
    largest(own, (tokens) => tokens.length),
  );
  const batch = items.length;
  const ids = new Int32Array(batch * length); // right padding: id 0, masked, never read
  const positions = new Int32Array(batch * length);
  const keyMask = new Float32Array(batch * (before + length));
  const rows: number[] = [];
  const targets: number[] = [];
  items.forEach((item, index) => {
    const { tokens } = entries[index]!;
    ids.set(own[index]!, index * length);
    own[index]!.forEach((_token, slot) => (positions[index * length + slot] = tokens + slot));
    // The prefix's slots (right-aligned in `before`), then the item's own tokens.
    const row = index * (before + length) + before;
    keyMask.fill(1, row - tokens, row + own[index]!.length);
    // Completion token k is predicted from context position context.length − 1 + k.
    item.completion.forEach((token, offset) => {
      rows.push(index * length + item.context.length - 1 - tokens + offset);
      targets.push(token);
    });
  });
  const hidden = model.forwardHidden({ ids, batch, length, positions, keyMask, keysValues });
  const completionHidden = selectRows(hidden, Int32Array.from(rows)); // [totalTokens, hidden]
  const { logProbs } = gatherLogProbs(model.head(completionHidden), Int32Array.from(targets));
  return { logProbs, hidden: completionHidden.data.slice() };
}
