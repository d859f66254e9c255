/** One panel per figure, drawn with uPlot and kept across polls (new data, same chart). */
import type { Figure } from './api.js';
import { alignedData, chartOptions, signatureOf } from './charts.js';
import { byId, el } from './format.js';

/** The uPlot instance of each figure, and what it was built for. */
export interface ChartState {
  charts: Record<string, uPlot>;
  signatures: Record<string, string>;
}

function figurePanel(figure: Figure): HTMLElement {
  const existing = document.getElementById(`figure-${figure.id}`);
  if (existing) return existing;
  const panel = el('section', 'panel');
  panel.id = `figure-${figure.id}`;
  panel.appendChild(el('h3', null, figure.title));
  panel.appendChild(el('p', 'description', figure.description));
  panel.appendChild(el('div', 'chart'));
  panel.appendChild(el('ul', 'notes'));
  byId('figures').appendChild(panel);
  return panel;
}

function chartWidth(container: Element): number {
  return Math.max(260, Math.floor(container.clientWidth));
}

export function renderFigure(figure: Figure, state: ChartState): void {
  const panel = figurePanel(figure);
  const holder = panel.querySelector('.chart') as HTMLElement;
  const notes = panel.querySelector('.notes') as HTMLElement;
  notes.replaceChildren(...figure.notes.map((note) => el('li', null, note)));
  const existing = state.charts[figure.id];
  if (figure.series.length === 0) {
    if (existing) {
      existing.destroy();
      delete state.charts[figure.id];
    }
    holder.replaceChildren(el('div', 'empty', 'No data yet'));
    panel.dataset.series = '0';
    return;
  }
  const data = alignedData(figure);
  const signature = signatureOf(figure);
  if (existing && state.signatures[figure.id] === signature) {
    existing.setData(data);
  } else {
    if (existing) existing.destroy();
    holder.replaceChildren();
    state.charts[figure.id] = new uPlot(chartOptions(figure, chartWidth(holder)), data, holder);
    state.signatures[figure.id] = signature;
  }
  panel.dataset.series = String(figure.series.length);
}

/** Charts follow the width of the figure grid. */
export function resizeChartsWithPage(state: ChartState): void {
  const observer = new ResizeObserver(() => {
    for (const [id, chart] of Object.entries(state.charts)) {
      const holder = document.querySelector(`#figure-${id} .chart`);
      if (holder && Math.abs(chart.width - chartWidth(holder)) > 2) {
        chart.setSize({ width: chartWidth(holder), height: 300 });
      }
    }
  });
  observer.observe(byId('figures'));
}
