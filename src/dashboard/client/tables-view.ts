/** The configuration table and the feed of the latest records. */
import type { ConfigRow, FeedEntry, MetricsRecord, RunSummary } from './api.js';
import { byId, el, number, percent } from './format.js';

function scrolling(table: HTMLElement): HTMLElement {
  const scroll = el('div', 'scroll');
  scroll.appendChild(table);
  return scroll;
}

export function renderConfig(runs: RunSummary[], rows: ConfigRow[]): void {
  const table = el('table');
  const head = el('tr');
  head.appendChild(el('th', null, 'setting'));
  for (const run of runs) head.appendChild(el('th', null, run.label));
  const thead = el('thead');
  thead.appendChild(head);
  table.appendChild(thead);
  const body = el('tbody');
  for (const row of rows) {
    const tr = el('tr', runs.length > 1 && row.differs ? 'differs' : null);
    const key = el('td');
    key.appendChild(el('code', null, row.key));
    tr.appendChild(key);
    for (const value of row.values) {
      const cell = el('td');
      cell.appendChild(el('code', null, value === null ? '—' : value));
      tr.appendChild(cell);
    }
    body.appendChild(tr);
  }
  table.appendChild(body);
  byId('config').replaceChildren(scrolling(table));
}

function describeRecord(record: MetricsRecord): string {
  if (record.type === 'update') {
    return (
      `${record.agent}: batch reward ${number(record.batchRewardMean)}, KL ${number(record.kl)}` +
      `${record.inRegion ? '' : ' (out of region)'}, certificate ${number(record.certificate)}`
    );
  }
  if (record.type === 'stage') {
    return (
      `reward ${number(record.rewardBefore)} → ${number(record.rewardAfter)}` +
      (record.regression ? ' — regression' : '')
    );
  }
  if (record.type === 'eval')
    return `eval accuracy ${percent(record.accuracy)} (n=${record.count})`;
  if (record.type === 'swap') return `${record.agent}: ${record.fromModel} → ${record.toModel}`;
  return '';
}

export function renderFeed(feed: readonly FeedEntry[]): void {
  const table = el('table');
  const head = el('tr');
  for (const title of ['run', 'record', 'stage', 'generated tokens', 'what']) {
    head.appendChild(el('th', null, title));
  }
  table.appendChild(head);
  for (const { run, record } of feed.slice(-12).reverse()) {
    const tr = el('tr');
    tr.appendChild(el('td', null, run));
    tr.appendChild(el('td', null, record.type));
    tr.appendChild(el('td', 'number', record.stage));
    const tokens = record.generatedTokens;
    tr.appendChild(
      el('td', 'number', typeof tokens === 'number' ? tokens.toLocaleString('en-US') : ''),
    );
    tr.appendChild(el('td', null, describeRecord(record)));
    table.appendChild(tr);
  }
  byId('feed').replaceChildren(scrolling(table));
}
