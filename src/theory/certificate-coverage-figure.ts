import type { Figure, FigureSeries } from '../figures/figure.js';
import { paletteColor, referenceColor } from '../figures/palette.js';
import { binomialInterval } from '../rl/index.js';
import type { CoverageCell } from './certificate-coverage.js';

/**
 * The probabilistic certificate's figure: for each method, how often its lower bound lay below
 * the expectation it bounds, against the stated rate 1 − α, with the 95% Wilson interval of that
 * measured rate as a band; the diagonal is "holds exactly at its stated rate". The caption gives
 * the batch mean's own rate (the certificate without an interval) for contrast.
 */
export function certificateCoverageFigure(cells: readonly CoverageCell[], setting: string): Figure {
  const methods = [...new Set(cells.map((cell) => cell.method))].filter(
    (method) => method !== 'point estimate',
  );
  const confidences = [...new Set(cells.map((cell) => cell.confidence))]
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  const series: FigureSeries[] = methods.map((method, index) => ({
    label: method,
    color: paletteColor(index),
    style: 'line',
    markers: true,
    bandLabel: index === 0 ? '95% interval of the measured rate' : undefined,
    points: cells
      .filter((cell) => cell.method === method)
      .sort((a, b) => a.confidence - b.confidence)
      .map((cell) => {
        const [low, high] = binomialInterval({
          successes: cell.heldForExpectation,
          trials: cell.trials,
        });
        return { x: cell.confidence, y: cell.heldForExpectation / cell.trials, low, high };
      }),
  }));
  series.push({
    label: 'stated rate',
    color: referenceColor,
    style: 'line',
    dashed: true,
    points: confidences.map((confidence) => ({ x: confidence, y: confidence })),
  });
  const point = cells.find((cell) => cell.method === 'point estimate');
  const rate = (cell: CoverageCell) =>
    `${((100 * cell.heldForExpectation) / cell.trials).toFixed(1)}%`;
  const atTop = cells.filter((cell) => cell.confidence === confidences.at(-1));
  return {
    id: 'certificate-coverage',
    title: 'How often the held-out certificate lies below what it bounds',
    description:
      `${setting} At the stated ${(100 * confidences.at(-1)!).toFixed(0)}%: ` +
      `${atTop.map((cell) => `${cell.method} ${rate(cell)}`).join(', ')}` +
      (point ? `; the batch mean without an interval held in ${rate(point)}.` : '.'),
    xLabel: 'stated rate 1 − α',
    yLabel: 'measured rate (bound ≤ its expectation)',
    xTicks: confidences,
    series,
    notes: [],
  };
}
