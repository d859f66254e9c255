import type { TransformerLM } from '../nn/transformer.js';
import { isGradientEnabled } from '../tensor/index.js';

/**
 * Positions the layers of some models ran, counted by wrapping each model's `forwardHidden`:
 * every row of its input (batch × length, left padding included: padded rows are computed
 * too), split by whether gradients were recorded; and the rows their LM head ran (`head`, the
 * one way to logits). A bench instrument, not a training feature: the counts turn a stage's
 * seconds into a rate (stageFlops).
 */
export class LayerRows {
  withGradients = 0;
  withoutGradients = 0;
  headWithGradients = 0;
  headWithoutGradients = 0;
  private readonly restore: Array<() => void> = [];

  constructor(models: readonly TransformerLM[]) {
    for (const model of new Set(models)) {
      const { forwardHidden, head } = model;
      model.forwardHidden = (input) => {
        const rows = input.batch * input.length;
        if (isGradientEnabled()) this.withGradients += rows;
        else this.withoutGradients += rows;
        return forwardHidden.call(model, input);
      };
      model.head = (hidden) => {
        const rows = hidden.size / model.config.hiddenSize;
        if (isGradientEnabled()) this.headWithGradients += rows;
        else this.headWithoutGradients += rows;
        return head.call(model, hidden);
      };
      this.restore.push(() => {
        model.forwardHidden = forwardHidden;
        model.head = head;
      });
    }
  }

  /** Puts the models' own forwardHidden back. */
  detach(): void {
    for (const restore of this.restore.splice(0)) restore();
  }
}

/**
 * FLOPs of the layers' weight products over the counted rows, for agents whose layer weights are
 * frozen (LoRA on a frozen base): 2·W per row forward, and 2·W more per row with gradients for
 * the input gradients of its backward pass (no weight gradients). Not counted: the LM head
 * (it runs on a turn's tokens only), the adapters, attention's own products and elementwise work,
 * so the rate it gives is a lower bound on the work done per second.
 */
export function stageLayerFlops(rows: LayerRows, layerWeights: number): number {
  return 2 * layerWeights * (rows.withoutGradients + 2 * rows.withGradients);
}

/**
 * FLOPs of the LM head's product over its counted rows (hidden × vocabulary weights, frozen):
 * 2 per weight per row, twice that with gradients (the hidden states' gradient).
 */
export function stageHeadFlops(rows: LayerRows, headWeights: number): number {
  return 2 * headWeights * (rows.headWithoutGradients + 2 * rows.headWithGradients);
}
