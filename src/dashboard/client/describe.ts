/** Records described in words for the feed; plain strings, no DOM (tested in Node). */

/** The lazy schedule's decision after an update, as metrics.jsonl records it. */
export interface ResamplingDecisionView {
  resampled: boolean;
  totalVariation: number;
  staleTerm: number;
  slack: number;
  threshold: number | 'infinity';
}

const short = (value: number) =>
  Number.isFinite(value) ? String(Number(value.toPrecision(3))) : 'n/a';

/**
 * Whether the next update got a fresh batch, and the comparison that decided it: the stale term
 * 2ε·TV̂·m against κ × the update's certificate slack (docs/method.md §11).
 */
export function describeResampling(decision: ResamplingDecisionView): string {
  const threshold = decision.threshold === 'infinity' ? '∞' : short(decision.threshold);
  const relation = decision.resampled ? '≥' : '<';
  return (
    `${decision.resampled ? 'resampled' : 'kept the batch'} (TV ${short(decision.totalVariation)}; ` +
    `stale ${short(decision.staleTerm)} ${relation} ${threshold} × slack ${short(decision.slack)})`
  );
}
