import { certificateBounds } from './certificate-bounds.js';
import { scalingMetrics, type FamilyResult, type TheoryExperimentResult } from './experiment.js';
import { gameFamilyByName } from './families.js';
import type { PowerLawFit } from './fit.js';
import { allSchedules, describeTightness } from './tightness.js';

/**
 * Human-readable renderings of a theory experiment: the terminal table, the markdown report and
 * the scaling plot's description. Pure: strings in, strings out; writing them is output.ts's job.
 */
export interface ReportContext {
  /** Measured by the caller; omitted from the text when absent. */
  readonly wallSeconds?: number;
  /** File name of the plot, relative to the report. */
  readonly plotFile?: string;
}

/** What the paper predicts for each fitted metric (docs/method.md §7), where it says anything. */
const predictions: Readonly<Record<string, string>> = {
  staleError: '≈ 2',
  freshError: '≈ 1',
};

/** A fitted slope with its interval, e.g. `0.38 [0.27, 0.50]`; n/a without a slope. */
export function formatSlope(fit: PowerLawFit): string {
  if (fit.slope === null) return 'n/a';
  const interval = fit.interval
    ? ` [${fit.interval[0].toFixed(2)}, ${fit.interval[1].toFixed(2)}]`
    : '';
  return `${fit.slope.toFixed(2)}${interval}`;
}

function formatMean(mean: number, standardError: number): string {
  return `${mean.toExponential(2)} ± ${standardError.toExponential(1)}`;
}

function settingsLine(result: TheoryExperimentResult): string {
  const config = result.config;
  const sizes = [...config.agentCounts].sort((first, second) => first - second).join(', ');
  return (
    `N ∈ {${sizes}}, T = ${config.tokensPerTurn} tokens per turn, V = ${config.vocabularySize}, ` +
    `${config.rounds} round${config.rounds === 1 ? '' : 's'}, δ = ${config.delta}, ` +
    `${config.games} games per N and family, seed ${config.seed}, initial logits N(0, ${config.logitScale}²)`
  );
}

function meansRows(family: FamilyResult): string[][] {
  const first = family.fits[scalingMetrics[0]!.key]!;
  return first.groups.map((group, index) => [
    String(group.agentCount),
    String(group.games),
    ...scalingMetrics.map((metric) => {
      const summary = family.fits[metric.key]!.groups[index]!;
      return formatMean(summary.mean, summary.standardError);
    }),
  ]);
}

function padTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padStart(widths[column]!)).join('  '));
}

function checkSentence(result: TheoryExperimentResult): string {
  const check = result.check;
  return (
    `certificate: ${check.violations} of ${check.updates} updates exceed their true improvement ` +
    `(largest certificate − true improvement ${check.maxExcess.toExponential(2)}); ` +
    `literal docs/method.md §5 form: ${check.specFormViolations} ` +
    `(largest excess ${check.maxSpecFormExcess.toExponential(2)}); ` +
    `the largest |true − surrogate| used ${(100 * check.maxErrorShare).toFixed(0)}% of its update's penalty`
  );
}

const tightnessHeader = [
  'certificate',
  'violations',
  'positive',
  'cert/true q10',
  'median',
  'q90',
] as const;

/** One row per certificate of certificate-bounds.ts, over every update of every family. */
function tightnessRows(result: TheoryExperimentResult): string[][] {
  const tightness = describeTightness(allSchedules(result.check.bounds));
  return certificateBounds.map(({ summaryKey }) => {
    const entry = tightness[summaryKey]!;
    const quantiles = entry.ratio_quantiles;
    const format = (value: number | undefined) =>
      value === undefined ? 'n/a' : value.toPrecision(3);
    return [
      summaryKey,
      `${entry.violations} of ${entry.updates}`,
      `${(100 * entry.fraction_positive).toFixed(0)}%`,
      format(quantiles?.q10),
      format(quantiles?.median),
      format(quantiles?.q90),
    ];
  });
}

const tightnessNote =
  'cert/true: certificate ÷ true improvement over the updates that improved (1 = exact, ' +
  '≤ 1 for a valid bound); positive: share of updates the certificate certifies as improvements';

/** The terminal summary of `teamtr theory` (without --json). */
export function renderTheoryTable(
  result: TheoryExperimentResult,
  context: ReportContext = {},
): string {
  const lines: string[] = [`teamtr theory: ${settingsLine(result)}`, ''];
  for (const family of result.families) {
    lines.push(`family ${family.family}: mean per game (± SE) of the stage totals`);
    lines.push(
      ...padTable([
        ['N', 'games', ...scalingMetrics.map((metric) => metric.shortLabel)],
        ...meansRows(family),
      ]).map((line) => `  ${line}`),
    );
    lines.push('');
  }
  lines.push('slopes of log(mean) on log(N), 95% bootstrap CI:');
  const header = ['metric', 'paper', ...result.families.map((family) => family.family)];
  const rows = scalingMetrics.map((metric) => [
    metric.label,
    predictions[metric.key] ?? '',
    ...result.families.map((family) => formatSlope(family.fits[metric.key]!)),
  ]);
  lines.push(...padTable([header, ...rows]).map((line) => `  ${line}`));
  lines.push(
    '',
    checkSentence(result),
    '',
    'tighter certificates (src/theory/certificate-bounds.ts):',
  );
  lines.push(
    ...padTable([[...tightnessHeader], ...tightnessRows(result)]).map((line) => `  ${line}`),
    `  ${tightnessNote}`,
  );
  if (context.wallSeconds !== undefined)
    lines.push(`wall time ${context.wallSeconds.toFixed(1)} s`);
  return `${lines.join('\n')}\n`;
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
}

const methodText = [
  'Every quantity is exact (float64), computed by dynamic programming over the prefix tree of',
  'transcripts (V^h prefixes at depth h): occupancy d_h by a forward pass, values V_h by a',
  'backward pass from the rewards, Q_h(s,a) = V_{h+1}(s·a) and A = Q − V. A stage updates each',
  'agent in turn order with the natural-gradient step π_new ∝ π_old·exp(η·A), η solved by Newton',
  "so that the token-level KL (mean over the agent's positions of E_{s∼d}[KL(π_old‖π_new)]) is",
  "exactly δ. Under fresh occupancy (TeamTR) d and A are the current intermediate team's; under",
  "stale occupancy they are the start-of-stage team's for every update; the joint step updates",
  'everyone at once from the start-of-stage team. The surrogate is L = Σ_{h∈agent} E_{d_h}[Σ_a',
  'π_new(a|s) A(s,a)]; the true improvement is J after the update minus J before, both computed',
  'exactly from the team the update is actually applied to; the surrogate error of a stage is',
  'Σ_updates |true − L|. The certificate is L − 2ε Σ_k Σ_{j<k} E[√(KL_j/2)] with ε the exact',
  'max |E_{π_new}[A]|, plus, for stale occupancy, the shift of the earlier-updated agents',
  '(derivation in src/theory/certificate.ts). Slopes are least-squares fits of log(mean over',
  'games) on log N; the 95% intervals come from resampling games with replacement within each N.',
].join('\n');

const codeText = [
  '- `src/theory/game.ts`, `families.ts`: the games and their reward families',
  '- `src/theory/policy.ts`, `exact.ts`: softmax tables; J, occupancy, Q, A, KL by dynamic programming',
  '- `src/theory/trust-region.ts`: the exact KL-δ natural-gradient step',
  '- `src/theory/certificate.ts`: surrogate bounds and their derivation',
  '- `src/theory/schedules.ts`: TeamTR (fresh), sequential-stale and joint stages',
  '- `src/theory/experiment.ts`, `fit.ts`: the scaling experiment, slopes and bootstrap',
  '- `src/theory/report.ts`, `scaling-figure.ts`, `output.ts`: this report, the figure, atomic writes',
  '- `src/cli/commands/theory.ts`: the `teamtr theory` command',
].join('\n');

function headlineLines(result: TheoryExperimentResult, context: ReportContext): string[] {
  const headline = result.families[0]!;
  const lines = [
    `## Headline: family \`${headline.family}\` (${gameFamilyByName(headline.family).description})`,
    '',
    ...markdownTable(
      ['quantity (accumulated over a stage)', 'slope vs N [95% CI]', 'paper'],
      scalingMetrics.map((metric) => [
        metric.label,
        formatSlope(headline.fits[metric.key]!),
        predictions[metric.key] ?? '—',
      ]),
    ),
  ];
  if (context.plotFile) lines.push('', `![log-log scaling](${context.plotFile})`);
  return lines;
}

function familyLines(result: TheoryExperimentResult): string[] {
  const lines = [
    '',
    '## Slopes for every family',
    '',
    ...markdownTable(
      ['family', ...scalingMetrics.map((metric) => metric.label)],
      result.families.map((family) => [
        family.family,
        ...scalingMetrics.map((metric) => formatSlope(family.fits[metric.key]!)),
      ]),
    ),
  ];
  for (const family of result.families) {
    lines.push('', `### ${family.family}: mean per game ± SE`, '');
    lines.push(
      ...markdownTable(
        ['N', 'games', ...scalingMetrics.map((metric) => metric.label)],
        meansRows(family),
      ),
    );
    const notes = scalingMetrics.filter((metric) => family.fits[metric.key]!.note);
    for (const metric of notes)
      lines.push('', `${metric.label}: no slope, ${family.fits[metric.key]!.note}.`);
  }
  return lines;
}

/** The markdown report written next to the plot. */
export function renderTheoryReport(
  result: TheoryExperimentResult,
  context: ReportContext = {},
): string {
  const lines: string[] = [
    "# Exact check of TeamTR's theory in tabular team games",
    '',
    settingsLine(result) + '.',
    '',
    ...headlineLines(result, context),
    ...familyLines(result),
    '',
    '## Certificate check',
    '',
    `${checkSentence(result)}.`,
    '',
    'Tighter certificates (derivations in `src/theory/certificate-bounds.ts`), every update of every family:',
    '',
    ...markdownTable(tightnessHeader, tightnessRows(result)),
    '',
    `${tightnessNote}.`,
  ];
  if (context.wallSeconds !== undefined)
    lines.push('', `Wall time: ${context.wallSeconds.toFixed(1)} s.`);
  lines.push(
    '',
    '## How it is computed',
    '',
    methodText,
    '',
    '## Where the code is',
    '',
    codeText,
    '',
  );
  return lines.join('\n');
}
