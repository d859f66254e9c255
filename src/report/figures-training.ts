import type { Figure } from '../figures/figure.js';
import { colorOf, evaluationsOf, pointsOf, stagesOf, updatesOf, withData } from './figure-data.js';
import type { RunView } from './runs.js';
import { formatPercent, formatValue } from '../figures/ticks.js';

/** Training curves at matched budgets: the x axis is generated tokens, not iterations. */

export function rewardFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  return {
    id: 'reward',
    title: 'Team reward vs generated tokens',
    description:
      'Mean team reward of each fresh batch, against the tokens the policies have generated: schedules compare at matched rollout budgets.',
    xLabel: 'generated tokens',
    yLabel: 'mean team reward (batch)',
    series: withData(
      runs.map((run) => ({
        label: run.label,
        color: colorOf(colors, run),
        style: 'line',
        points: pointsOf(
          updatesOf(run),
          (record) => record.generatedTokens,
          (record) => record.batchRewardMean,
        ),
      })),
    ),
    notes: runs.map((run) => {
      const stage = stagesOf(run).at(-1);
      return stage
        ? `${run.label}: reward ${formatValue(stage.rewardAfter)} after stage ${stage.stage}`
        : `${run.label}: no stage finished yet`;
    }),
  };
}

export function accuracyFigure(runs: readonly RunView[], colors: Map<string, string>): Figure {
  return {
    id: 'accuracy',
    title: 'Eval accuracy vs generated tokens',
    description:
      'Team accuracy on held-out problems (greedy decoding unless configured otherwise), at matched generated-token budgets.',
    xLabel: 'generated tokens',
    yLabel: 'eval accuracy',
    yMin: 0,
    series: withData(
      runs.map((run) => ({
        label: run.label,
        color: colorOf(colors, run),
        style: 'line',
        markers: true,
        points: pointsOf(
          evaluationsOf(run),
          (record) => record.generatedTokens,
          (record) => record.accuracy,
        ),
      })),
    ),
    notes: runs.map((run) => {
      const evaluations = evaluationsOf(run);
      const first = evaluations[0];
      const last = evaluations.at(-1);
      if (!first || !last) return `${run.label}: no evaluation yet`;
      const interval = Array.isArray(last.interval)
        ? ` (95% CI ${formatPercent(last.interval[0])}–${formatPercent(last.interval[1])}, n=${last.count})`
        : '';
      return `${run.label}: ${formatPercent(first.accuracy)} → ${formatPercent(last.accuracy)}${interval}`;
    }),
  };
}
