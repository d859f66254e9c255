import type {
  CertificateFormStatistics,
  TrainSummary,
  YardstickStatistics,
} from '../trainer/summary.js';

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;
const interval = (bounds: [number, number]): string =>
  `[${percent(bounds[0])}, ${percent(bounds[1])}]`;
const number = (value: number | null, digits = 3): string =>
  value === null || !Number.isFinite(value) ? 'n/a' : value.toFixed(digits);

/** A number with its sign (+0.0012, −0.0300), or n/a. */
export const signed = (value: number | null): string =>
  value === null || !Number.isFinite(value) ? 'n/a' : `${value >= 0 ? '+' : ''}${value.toFixed(4)}`;

/** The closing summary of a training run, for a person. */
export function formatSummary(summary: TrainSummary): string {
  const lines = [
    '',
    `${summary.interrupted ? 'Interrupted' : 'Finished'}: ${summary.schedule}, seed ${summary.seed}, ${summary.stages} stages, ${summary.updates} agent updates, ${summary.generatedTokens.toLocaleString('en-US')} generated tokens, ${summary.wallSeconds.toFixed(0)} s`,
  ];
  if (summary.evalBefore)
    lines.push(
      `  eval accuracy before: ${percent(summary.evalBefore.accuracy)} ${interval(summary.evalBefore.interval)} (n=${summary.evalBefore.count})`,
    );
  if (summary.evalAfter)
    lines.push(
      `  eval accuracy after:  ${percent(summary.evalAfter.accuracy)} ${interval(summary.evalAfter.interval)} (n=${summary.evalAfter.count})`,
    );
  const certificates = summary.certificates;
  lines.push(
    `  trust region: mean token KL ${number(certificates.meanKl, 5)}, out-of-region rate ${percent(certificates.outOfRegionRate)}`,
    `  certificates (lower bounds on each update's improvement) against the measured improvement:`,
    ...certificateLines('first order, on the batch it was fitted to', certificates.firstOrder),
    ...(certificates.secondOrder
      ? certificateLines('second order, on the batch it was fitted to', certificates.secondOrder)
      : []),
    ...(certificates.heldOutBatch
      ? [
          ...certificateLines(
            'first order, on held-out prompts',
            certificates.heldOutBatch.firstOrder,
          ),
          ...certificateLines(
            'second order, on held-out prompts',
            certificates.heldOutBatch.secondOrder,
          ),
        ]
      : []),
    `  team reward per stage: ${signed(summary.stageImprovement.inSamplePerStage)} on the stage's own problems, ${signed(summary.stageImprovement.outOfSamplePerStage)} on the next stage's new ones`,
    `  stage regressions: ${summary.regressions}`,
    ...summary.warnings.map((warning) => `  WARNING: ${warning}`),
    `  run directory: ${summary.runDirectory}`,
    `  see it: teamtr dashboard ${summary.runDirectory}   (or: teamtr report ${summary.runDirectory})`,
    '',
  );
  return lines.join('\n');
}

function certificateLines(form: string, statistics: CertificateFormStatistics): string[] {
  const against = (name: string, yardstick: YardstickStatistics | null) =>
    yardstick
      ? [
          `      vs ${name} improvement: mean ${number(yardstick.meanMeasuredImprovement, 4)}; certificate − measured ${number(yardstick.meanExcess, 4)} ${yardstick.meanExcessInterval ? `[${number(yardstick.meanExcessInterval[0], 4)}, ${number(yardstick.meanExcessInterval[1], 4)}]` : ''}, above it for ${yardstick.certificateAboveMeasuredFraction === null ? 'n/a' : percent(yardstick.certificateAboveMeasuredFraction)} of updates; rank correlation cumulative ${number(yardstick.cumulativeRankCorrelation)}, per update ${number(yardstick.perUpdateRankCorrelation)}`,
        ]
      : [];
  return [
    `    ${form}: mean ${number(statistics.meanCertificate, 4)}, positive for ${percent(statistics.certifiedFraction)} of updates`,
    ...against('in-sample', statistics.inSample),
    ...against('held-out', statistics.heldOut),
  ];
}
