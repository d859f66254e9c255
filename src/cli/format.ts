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

type Evaluation = NonNullable<TrainSummary['evalBefore']>;

/** What the held-out accuracies before and after say, judged by their 95% intervals. */
export function readAccuracy(before: Evaluation, after: Evaluation): string {
  const points = 100 * (after.accuracy - before.accuracy);
  const change = `${points >= 0 ? '+' : ''}${points.toFixed(1)} points`;
  if (after.interval[0] > before.interval[1])
    return `${change}, beyond both 95% intervals: the team improved`;
  if (after.interval[1] < before.interval[0])
    return `${change}, beyond both 95% intervals: the team got worse`;
  return `${change}, within the intervals' overlap: not told apart from noise (more eval problems or a longer run would)`;
}

/** What a certificate's level says: how often it certifies an improvement. */
export function readCertificate(statistics: CertificateFormStatistics): string {
  if (statistics.certifiedFraction === 0)
    return 'it never certifies an improvement, so it says nothing about which updates helped';
  if (statistics.certifiedFraction >= 0.95)
    return 'it certifies an improvement for nearly every update';
  return `it certifies an improvement for ${percent(statistics.certifiedFraction)} of updates`;
}

/** What certificate − measured and the rank correlation say about a certificate. */
export function readYardstick(yardstick: YardstickStatistics, heldOut: boolean): string {
  const excess = yardstick.meanExcessInterval;
  const level =
    excess === null
      ? 'too few measured updates to compare'
      : excess[1] < 0
        ? 'below the measured improvement: a valid lower bound on average'
        : excess[0] > 0
          ? heldOut
            ? 'above the measured improvement: as estimated, not a lower bound here'
            : 'above the measured improvement: read on its own batch the surrogate is optimistic (fitting bias); read it on held-out prompts'
          : 'within noise of the measured improvement: tight';
  const correlation = yardstick.perUpdateRankCorrelation;
  const ranking =
    correlation === null
      ? ''
      : correlation >= 0.3
        ? '; it ranks updates by their measured effect'
        : correlation >= 0.1
          ? '; it ranks updates weakly'
          : correlation > -0.1
            ? '; it does not tell which update helped more'
            : '; it ranks updates against their measured effect';
  return `${level}${ranking}`;
}

function yardstickLines(name: string, yardstick: YardstickStatistics | null): string[] {
  if (!yardstick) return [];
  const bounds = yardstick.meanExcessInterval
    ? ` [${number(yardstick.meanExcessInterval[0], 4)}, ${number(yardstick.meanExcessInterval[1], 4)}]`
    : '';
  const above =
    yardstick.certificateAboveMeasuredFraction === null
      ? 'n/a'
      : percent(yardstick.certificateAboveMeasuredFraction);
  return [
    `      vs the ${name} improvement (mean ${signed(yardstick.meanMeasuredImprovement)}): certificate − measured ${signed(yardstick.meanExcess)}${bounds}, above it for ${above} of updates; rank correlation per update ${number(yardstick.perUpdateRankCorrelation)}, cumulative ${number(yardstick.cumulativeRankCorrelation)}`,
    `        → ${readYardstick(yardstick, name === 'held-out')}`,
  ];
}

function certificateLines(form: string, statistics: CertificateFormStatistics): string[] {
  return [
    `    ${form}: mean ${signed(statistics.meanCertificate)}, positive for ${percent(statistics.certifiedFraction)} of updates`,
    `        → ${readCertificate(statistics)}`,
    ...yardstickLines('in-sample', statistics.inSample),
    ...yardstickLines('held-out', statistics.heldOut),
  ];
}

function accuracyLines(summary: TrainSummary): string[] {
  const { evalBefore: before, evalAfter: after } = summary;
  return [
    ...(before
      ? [
          `  eval accuracy before: ${percent(before.accuracy)} ${interval(before.interval)} (n=${before.count})`,
        ]
      : []),
    ...(after
      ? [
          `  eval accuracy after:  ${percent(after.accuracy)} ${interval(after.interval)} (n=${after.count})`,
        ]
      : []),
    ...(before && after ? [`        → ${readAccuracy(before, after)}`] : []),
  ];
}

function trustRegionLines(summary: TrainSummary): string[] {
  const certificates = summary.certificates;
  const reading =
    certificates.outOfRegionRate === 0
      ? 'every update ended inside its trust region'
      : `${percent(certificates.outOfRegionRate)} of updates ended outside their trust region: lower the learning rate or raise trustRegion.delta`;
  return [
    `  trust region: mean token KL ${number(certificates.meanKl, 5)}, out-of-region rate ${percent(certificates.outOfRegionRate)}`,
    `        → ${reading}`,
  ];
}

function stageLines(summary: TrainSummary): string[] {
  const { inSamplePerStage, outOfSamplePerStage } = summary.stageImprovement;
  return [
    `  team reward per stage: ${signed(inSamplePerStage)} on the stage's own problems, ${signed(outOfSamplePerStage)} on the next stage's new ones`,
    ...(inSamplePerStage !== null && outOfSamplePerStage !== null
      ? [
          `        → the second is what carries over to new problems; the gap is the updates fitting their own batch`,
        ]
      : []),
    `  stage regressions: ${summary.regressions}`,
  ];
}

/** The closing summary of a training run, for a person: each figure with a line reading it. */
export function formatSummary(summary: TrainSummary): string {
  const certificates = summary.certificates;
  const heldOutBatch = certificates.heldOutBatch;
  const lines = [
    '',
    `${summary.interrupted ? 'Interrupted' : 'Finished'}: ${summary.schedule}, seed ${summary.seed}, ${summary.stages} stages, ${summary.updates} agent updates, ${summary.generatedTokens.toLocaleString('en-US')} generated tokens, ${summary.wallSeconds.toFixed(0)} s`,
    ...accuracyLines(summary),
    ...trustRegionLines(summary),
    `  certificates: lower bounds on each update's improvement, set against the improvement measured`,
    ...certificateLines('first order, on the batch it was fitted to', certificates.firstOrder),
    ...(certificates.secondOrder
      ? certificateLines('second order, on the batch it was fitted to', certificates.secondOrder)
      : []),
    ...(heldOutBatch
      ? [
          ...certificateLines('first order, on held-out prompts', heldOutBatch.firstOrder),
          ...certificateLines('second order, on held-out prompts', heldOutBatch.secondOrder),
        ]
      : []),
    ...stageLines(summary),
    ...summary.warnings.map((warning) => `  WARNING: ${warning}`),
    `  run directory: ${summary.runDirectory}`,
    '',
  ];
  return lines.join('\n');
}
