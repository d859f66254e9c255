/**
 * The dashboard's browser script (bundled to /assets/dashboard.js): it fetches the figures the
 * server builds (the same ones `teamtr report` draws as SVG) and draws them with uPlot; then it
 * polls each run's metrics for appended lines and redraws when something changed. Everything
 * from the server is inserted as text, never as HTML.
 */
import {
  getJson,
  type FeedEntry,
  type MetricsChunk,
  type Overview,
  type RunStatus,
} from './api.js';
import { renderFigure, resizeChartsWithPage, type ChartState } from './figures-view.js';
import { byId } from './format.js';
import { renderRuns } from './runs-view.js';
import { renderConfig, renderFeed } from './tables-view.js';
import { renderTranscripts } from './transcripts-view.js';

interface PageState extends ChartState {
  overview: Overview | null;
  offsets: Record<string, number>;
  feed: FeedEntry[];
  statuses: string;
  pollMs: number;
  polls: number;
}

declare global {
  interface Window {
    /** For the browser console and end-to-end tests: the uPlot instance of each figure. */
    teamtrDashboard: { charts: Record<string, uPlot>; state: PageState };
  }
}

const state: PageState = {
  overview: null,
  offsets: {},
  feed: [],
  charts: {},
  signatures: {},
  statuses: '',
  pollMs: 1000,
  polls: 0,
};
window.teamtrDashboard = { charts: state.charts, state };

function setLive(ok: boolean, text: string): void {
  byId('live').className = `live ${ok ? 'ok' : 'error'}`;
  byId('live-text').textContent = text;
}

async function loadOverview(): Promise<Overview> {
  const overview = await getJson<Overview>('/api/overview');
  state.overview = overview;
  state.pollMs = overview.pollIntervalMs || state.pollMs;
  state.statuses = overview.runs.map((run) => run.status).join(',');
  renderRuns(overview.runs, overview.runColors);
  for (const figure of overview.figures) renderFigure(figure, state);
  renderConfig(overview.runs, overview.config);
  await renderTranscripts(overview.runs);
  return overview;
}

/** New metrics lines of every run since the last poll; true when anything changed. */
async function pollMetrics(overview: Overview): Promise<boolean> {
  const changes = await Promise.all(
    overview.runs.map(async (run) => {
      const chunk = await getJson<MetricsChunk>(
        `/api/runs/${run.id}/metrics?since=${state.offsets[run.id] ?? 0}`,
      );
      if (chunk.reset) state.feed = state.feed.filter((entry) => entry.runId !== run.id);
      for (const record of chunk.records)
        state.feed.push({ runId: run.id, run: run.label, record });
      state.offsets[run.id] = chunk.nextOffset;
      return chunk.reset || chunk.records.length > 0;
    }),
  );
  if (state.feed.length > 200) state.feed = state.feed.slice(-200);
  return changes.some(Boolean);
}

async function pollStatuses(): Promise<boolean> {
  const runs = await getJson<RunStatus[]>('/api/runs');
  return runs.map((run) => run.status).join(',') !== state.statuses;
}

async function start(): Promise<void> {
  const overview = await loadOverview();
  state.offsets = { ...overview.offsets };
  state.feed = overview.recent.slice();
  renderFeed(state.feed);
  document.body.dataset.ready = 'true';
}

async function poll(): Promise<void> {
  if (!state.overview) return start();
  const [metricsChanged, statusChanged] = await Promise.all([
    pollMetrics(state.overview),
    pollStatuses(),
  ]);
  if (metricsChanged) renderFeed(state.feed);
  if (metricsChanged || statusChanged) await loadOverview();
}

async function tick(): Promise<void> {
  try {
    await poll();
    state.polls++;
    setLive(true, `live · updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setLive(false, `connection lost, retrying (${(error as Error).message})`);
  }
  setTimeout(() => void tick(), state.pollMs);
}

resizeChartsWithPage(state);
void tick();
