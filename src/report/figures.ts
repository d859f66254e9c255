import type { Figure } from '../figures/figure.js';
import { runColors } from './figure-data.js';
import { certificateFigure, occupancyFigure, regressionFigure } from './figures-certificates.js';
import { accuracyFigure, rewardFigure } from './figures-training.js';
import { klFigure, rankShiftFigure } from './figures-trust-region.js';
import type { RunView } from './runs.js';

/**
 * The figures of docs/method.md §5 for one run or several side by side, as plain data: training
 * curves at matched budgets, KL against δ, certificates against measured improvement, the
 * occupancy gap, probability shift by rank and per-stage regressions. Missing values (a null
 * measured improvement, the first update's occupancy gap) are left out, never drawn as zero.
 */

export const figureIds = [
  'reward',
  'accuracy',
  'kl',
  'certificate',
  'occupancy',
  'rank-shift',
  'regressions',
] as const;

export function buildFigures(runs: readonly RunView[]): Figure[] {
  const colors = runColors(runs);
  return [
    rewardFigure(runs, colors),
    accuracyFigure(runs, colors),
    klFigure(runs),
    certificateFigure(runs, colors),
    occupancyFigure(runs, colors),
    rankShiftFigure(runs, colors),
    regressionFigure(runs, colors),
  ];
}
