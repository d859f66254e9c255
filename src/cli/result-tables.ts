import type { ResultTable } from '../report/result-file.js';
import type {
  CertificateFormStatistics,
  TrainSummary,
  YardstickStatistics,
} from '../trainer/summary.js';
import { readAccuracy, readYardstick, signed } from './format.js';

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;
const fixed = (value: number | null, digits: number): string | null =>
  value === null || !Number.isFinite(value) ? null : value.toFixed(digits);

/** A training run's headline figures as one row, and what they say as the caption. */
export function runTable(summary: TrainSummary): ResultTable {
  const { evalBefore: before, evalAfter: after, certificates } = summary;
  const gain = before && after ? 100 * (after.accuracy - before.accuracy) : null;
  return {
    caption:
      before && after
        ? `Held-out team accuracy ${percent(before.accuracy)} → ${percent(after.accuracy)}: ${readAccuracy(before, after)}.`
        : `${summary.stages} stages of ${summary.schedule}.`,
    columns: [
      'seed',
      'schedule',
      'stages',
      'updates',
      'generated tokens',
      'eval accuracy before [95% CI]',
      'after [95% CI]',
      'gain (points)',
      'updates out of region',
      'mean token KL',
    ],
    rows: [
      [
        summary.seed,
        summary.schedule,
        summary.stages,
        summary.updates,
        summary.generatedTokens,
        before ? `${percent(before.accuracy)} [${before.interval.map(percent).join(', ')}]` : null,
        after ? `${percent(after.accuracy)} [${after.interval.map(percent).join(', ')}]` : null,
        gain === null ? null : `${gain >= 0 ? '+' : ''}${gain.toFixed(1)}`,
        percent(certificates.outOfRegionRate),
        fixed(certificates.meanKl, 5),
      ],
    ],
  };
}

type Form = [name: string, readOn: string, statistics: CertificateFormStatistics | null];

function certificateRow([name, readOn, statistics]: Form): Array<string | null> {
  const yardstick: YardstickStatistics | null = statistics?.heldOut ?? statistics?.inSample ?? null;
  const bounds = yardstick?.meanExcessInterval;
  return [
    name,
    readOn,
    statistics ? signed(statistics.meanCertificate) : null,
    statistics ? percent(statistics.certifiedFraction) : null,
    yardstick === null
      ? null
      : `${signed(yardstick.meanExcess)}${bounds ? ` [${bounds.map((value) => signed(value)).join(', ')}]` : ''}`,
    yardstick === null
      ? null
      : `${fixed(yardstick.perUpdateRankCorrelation, 2) ?? 'n/a'} / ${fixed(yardstick.cumulativeRankCorrelation, 2) ?? 'n/a'}`,
  ];
}

/** Each certificate against the measured improvement (held-out when measured). */
export function certificateTable(summary: TrainSummary): ResultTable {
  const certificates = summary.certificates;
  const heldOut = certificates.heldOutBatch;
  const forms: Form[] = [
    ['first order', "the update's own batch", certificates.firstOrder],
    ['second order', "the update's own batch", certificates.secondOrder],
    ...(heldOut
      ? ([
          ['first order', 'held-out batch', heldOut.firstOrder],
          ['second order', 'held-out batch', heldOut.secondOrder],
        ] as Form[])
      : []),
  ];
  const headline = heldOut?.secondOrder.heldOut ?? certificates.secondOrder?.inSample ?? null;
  return {
    caption: headline
      ? `The second-order certificate${heldOut ? ' read on held-out prompts' : ''}: ${readYardstick(headline, heldOut !== null)}.`
      : 'Certificates against the measured improvement.',
    columns: [
      'certificate (a lower bound)',
      'read on',
      'mean',
      '> 0 for',
      `certificate − ${heldOut ? 'held-out' : 'in-sample'} improvement [95% CI]`,
      'rank correlation, per update / cumulative',
    ],
    rows: forms.filter(([, , statistics]) => statistics !== null).map(certificateRow),
  };
}

/** The notes a training result carries: what its figures are and how they were measured. */
export function runNotes(summary: TrainSummary): string[] {
  const count = summary.evalAfter?.count;
  return [
    ...(count ? [`Held-out team accuracy on ${count} eval problems; 95% Wilson intervals.`] : []),
    'Certificates are lower bounds on each update’s improvement: one that holds has certificate − measured at or below 0 (its 95% interval is over updates).',
    `Team reward per stage: ${signed(summary.stageImprovement.inSamplePerStage)} on a stage’s own problems, ${signed(summary.stageImprovement.outOfSamplePerStage)} on the next stage’s new ones.`,
  ];
}
