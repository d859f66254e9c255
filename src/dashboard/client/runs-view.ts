/** The run cards: where each run stands, at a glance. */
import type { RunSummary } from './api.js';
import { byId, el, number, percent, safeColor } from './format.js';

function stat(list: HTMLElement, label: string, value: unknown, className?: string | null): void {
  const item = el('div', 'stat');
  item.appendChild(el('dt', null, label));
  item.appendChild(el('dd', className ?? null, value));
  list.appendChild(item);
}

function progressBar(run: RunSummary): HTMLElement {
  const progress = el('div', 'progress');
  const bar = el('div');
  bar.style.width = run.budget
    ? `${Math.min(100, (100 * run.generatedTokens) / run.budget).toFixed(1)}%`
    : '0';
  progress.appendChild(bar);
  progress.title =
    `${run.generatedTokens.toLocaleString('en-US')} of ` +
    `${run.budget ? run.budget.toLocaleString('en-US') : '?'} generated tokens`;
  return progress;
}

function statsOf(run: RunSummary): HTMLElement {
  const list = el('dl', 'stats');
  stat(list, 'stages', run.stages);
  stat(list, 'updates', run.updates);
  stat(list, 'generated tokens', run.generatedTokens.toLocaleString('en-US'));
  stat(list, 'eval accuracy', `${percent(run.accuracyBefore)} → ${percent(run.accuracyLast)}`);
  stat(list, 'last stage reward', number(run.rewardLast));
  stat(list, 'mean KL', number(run.meanKl));
  stat(list, 'out of region', percent(run.outOfRegionRate));
  stat(list, 'ρ cert. ~ measured', number(run.cumulativeRankCorrelation));
  stat(list, 'regressions', run.regressions, run.regressions > 0 ? 'bad' : null);
  return list;
}

function card(run: RunSummary, color: string): HTMLElement {
  const article = el('article', 'card');
  article.dataset.run = run.id;
  const title = el('div', 'title');
  const swatch = el('span', 'swatch');
  swatch.style.background = color;
  title.appendChild(swatch);
  title.appendChild(el('span', null, run.label));
  title.appendChild(el('span', `badge ${run.status}`, run.status));
  article.appendChild(title);
  const seed = run.seed === null ? 'n/a' : run.seed;
  article.appendChild(el('div', 'directory', `${run.schedule} · seed ${seed} · ${run.task}`));
  article.appendChild(progressBar(run));
  article.appendChild(statsOf(run));
  article.appendChild(el('div', 'directory', `${run.directory} · ${run.records} records`));
  if (run.damage) article.appendChild(el('div', 'damage', run.damage));
  return article;
}

export function renderRuns(runs: RunSummary[], runColors: Record<string, string>): void {
  const container = byId('runs');
  container.replaceChildren(
    ...runs.map((run) => card(run, safeColor(runColors[run.id] ?? '#0072b2'))),
  );
  const names = runs.map((run) => `${run.label} (${run.schedule})`).join(', ');
  byId('subtitle').textContent =
    `${runs.length}${runs.length === 1 ? ' run: ' : ' runs: '}${names}`;
}
