import type { ConfigRow } from './config-table.js';
import type { Figure } from '../figures/figure.js';
import type { RunOverview } from './run-overview.js';
import { escapeXml as escapeHtml } from '../figures/svg.js';
import { formatPercent, formatValue } from '../figures/ticks.js';

/**
 * The report page: one HTML file with its styles and every figure inlined as SVG, and nothing
 * fetched from anywhere (no scripts, fonts, images or links to load), so it opens offline and
 * can be mailed or archived as is.
 */

export interface ReportPage {
  runs: RunOverview[];
  figures: Array<{ figure: Figure; svg: string }>;
  config: ConfigRow[];
}

const styles = `
:root { color-scheme: light; --text: #1f2937; --muted: #6b7280; --line: #e5e7eb; --accent: #0072b2; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; color: var(--text); background: #f3f4f6; }
header { background: #111827; color: #f9fafb; padding: 20px 32px; }
header h1 { margin: 0; font-size: 22px; font-weight: 600; }
header p { margin: 4px 0 0; color: #d1d5db; }
main { padding: 24px 32px; max-width: 1600px; margin: 0 auto; }
h2 { font-size: 17px; margin: 28px 0 12px; }
table { border-collapse: collapse; background: #fff; width: 100%; font-size: 13px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f9fafb; font-weight: 600; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.differs td { background: #fffbeb; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 20px; }
figure { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; }
figcaption strong { color: var(--text); }
figcaption ul { margin: 6px 0 0; padding-left: 18px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
`;

function runsTable(runs: readonly RunOverview[]): string {
  const header = [
    'run',
    'schedule',
    'seed',
    'status',
    'stages',
    'updates',
    'generated tokens',
    'eval accuracy',
    'last reward',
    'mean KL',
    'out of region',
    'ρ cumulative',
    'regressions',
  ];
  const rows = runs.map((run) => {
    const cells = [
      `<td><strong>${escapeHtml(run.label)}</strong><br><code>${escapeHtml(run.directory)}</code></td>`,
      `<td>${escapeHtml(run.schedule)}</td>`,
      `<td class="number">${run.seed ?? 'n/a'}</td>`,
      `<td>${run.status}</td>`,
      `<td class="number">${run.stages}</td>`,
      `<td class="number">${run.updates}</td>`,
      `<td class="number">${run.generatedTokens.toLocaleString('en-US')}${run.budget ? ` / ${run.budget.toLocaleString('en-US')}` : ''}</td>`,
      `<td class="number">${formatPercent(run.accuracyBefore)} → ${formatPercent(run.accuracyLast)}</td>`,
      `<td class="number">${formatValue(run.rewardLast)}</td>`,
      `<td class="number">${formatValue(run.meanKl)}</td>`,
      `<td class="number">${formatPercent(run.outOfRegionRate)}</td>`,
      `<td class="number">${formatValue(run.cumulativeRankCorrelation)}</td>`,
      `<td class="number">${run.regressions}</td>`,
    ];
    return `<tr>${cells.join('')}</tr>`;
  });
  return `<div class="scroll"><table><thead><tr>${header.map((title) => `<th>${title}</th>`).join('')}</tr></thead><tbody>${rows.join('\n')}</tbody></table></div>`;
}

function figureBlock({ figure, svg }: { figure: Figure; svg: string }): string {
  const notes = figure.notes.map((note) => `<li>${escapeHtml(note)}</li>`).join('');
  return `<figure id="figure-${escapeHtml(figure.id)}">
${svg}<figcaption><strong>${escapeHtml(figure.title)}.</strong> ${escapeHtml(figure.description)}${notes ? `<ul>${notes}</ul>` : ''}</figcaption>
</figure>`;
}

function configSection(runs: readonly RunOverview[], rows: readonly ConfigRow[]): string {
  const header = `<tr><th>setting</th>${runs.map((run) => `<th>${escapeHtml(run.label)}</th>`).join('')}</tr>`;
  const body = rows.map(
    (row) =>
      `<tr${row.differs ? ' class="differs"' : ''}><td><code>${escapeHtml(row.key)}</code></td>${row.values.map((value) => `<td><code>${value === null ? '—' : escapeHtml(value)}</code></td>`).join('')}</tr>`,
  );
  const legend = runs.length > 1 ? '<p>Highlighted rows differ between runs.</p>' : '';
  return `${legend}<div class="scroll"><table><thead>${header}</thead><tbody>${body.join('\n')}</tbody></table></div>`;
}

export function renderReportHtml(page: ReportPage): string {
  const title = `TeamTR report: ${page.runs.map((run) => run.label).join(', ')}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${styles}</style>
</head>
<body>
<header><h1>TeamTR report</h1><p>${page.runs.length} run${page.runs.length === 1 ? '' : 's'}: ${escapeHtml(page.runs.map((run) => `${run.label} (${run.schedule})`).join(', '))}</p></header>
<main>
<h2>Runs</h2>
${runsTable(page.runs)}
<h2>Figures</h2>
<div class="grid">
${page.figures.map(figureBlock).join('\n')}
</div>
<h2>Configuration</h2>
${configSection(page.runs, page.config)}
</main>
</body>
</html>
`;
}
