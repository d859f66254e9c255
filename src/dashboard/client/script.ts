import { chartFunctions } from './chart-script.js';

/**
 * The dashboard's browser script, served as /assets/dashboard.js. It fetches the figures the
 * server builds (the same ones `teamtr report` draws as SVG) and draws them with uPlot (see
 * chart-script.ts); then it polls each run's metrics for appended lines and redraws when
 * something changed. Everything from the server is inserted as text, never as HTML.
 *
 * Kept as plain browser JavaScript in strings (no template literals inside) so the package
 * ships it without a bundler; a unit test compiles it to catch syntax errors.
 */
const pageFunctions = String.raw`
  var state = { overview: null, offsets: {}, feed: [], charts: {}, signatures: {}, statuses: '', pollMs: 1000, polls: 0 };
  // For the browser console and end-to-end tests: the uPlot instance of each figure.
  window.teamtrDashboard = { charts: state.charts, state: state };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function safeColor(color) {
    return /^#[0-9a-fA-F]{6}$/.test(color) ? color : '#6b7280';
  }

  function getJson(url) {
    return fetch(url, { cache: 'no-store' }).then(function (response) {
      if (!response.ok) throw new Error(url + ': HTTP ' + response.status);
      return response.json();
    });
  }

  function percent(value) {
    return value === null || value === undefined || !isFinite(value) ? 'n/a' : (100 * value).toFixed(1) + '%';
  }

  function number(value) {
    if (value === null || value === undefined || !isFinite(value)) return 'n/a';
    if (value === 0) return '0';
    var magnitude = Math.abs(value);
    if (magnitude >= 1e4) return Math.round(value).toLocaleString('en-US');
    if (magnitude < 1e-3) return value.toExponential(2);
    return String(Number(value.toPrecision(3)));
  }

  // ---- runs -------------------------------------------------------------------------------

  function runColor(run) {
    return safeColor((state.overview && state.overview.runColors[run.id]) || '#0072b2');
  }

  function stat(list, label, value, className) {
    var item = el('div', 'stat');
    item.appendChild(el('dt', null, label));
    item.appendChild(el('dd', className || null, value));
    list.appendChild(item);
  }

  function renderRuns(runs) {
    var container = document.getElementById('runs');
    container.replaceChildren();
    runs.forEach(function (run) {
      var card = el('article', 'card');
      card.dataset.run = run.id;
      var title = el('div', 'title');
      var swatch = el('span', 'swatch');
      swatch.style.background = runColor(run);
      title.appendChild(swatch);
      title.appendChild(el('span', null, run.label));
      title.appendChild(el('span', 'badge ' + run.status, run.status));
      card.appendChild(title);
      card.appendChild(el('div', 'directory', run.schedule + ' · seed ' + (run.seed === null ? 'n/a' : run.seed) + ' · ' + run.task));
      var progress = el('div', 'progress');
      var bar = el('div');
      bar.style.width = run.budget ? Math.min(100, (100 * run.generatedTokens) / run.budget).toFixed(1) + '%' : '0';
      progress.appendChild(bar);
      progress.title = run.generatedTokens.toLocaleString('en-US') + ' of ' + (run.budget ? run.budget.toLocaleString('en-US') : '?') + ' generated tokens';
      card.appendChild(progress);
      var list = el('dl', 'stats');
      stat(list, 'stages', run.stages);
      stat(list, 'updates', run.updates);
      stat(list, 'generated tokens', run.generatedTokens.toLocaleString('en-US'));
      stat(list, 'eval accuracy', percent(run.accuracyBefore) + ' → ' + percent(run.accuracyLast));
      stat(list, 'last stage reward', number(run.rewardLast));
      stat(list, 'mean KL', number(run.meanKl));
      stat(list, 'out of region', percent(run.outOfRegionRate));
      stat(list, 'ρ cert. ~ measured', number(run.cumulativeRankCorrelation));
      stat(list, 'regressions', run.regressions, run.regressions > 0 ? 'bad' : null);
      card.appendChild(list);
      card.appendChild(el('div', 'directory', run.directory + ' · ' + run.records + ' records'));
      container.appendChild(card);
    });
    var names = runs.map(function (run) { return run.label + ' (' + run.schedule + ')'; }).join(', ');
    document.getElementById('subtitle').textContent = runs.length + (runs.length === 1 ? ' run: ' : ' runs: ') + names;
  }

  function figurePanel(figure) {
    var panel = document.getElementById('figure-' + figure.id);
    if (panel) return panel;
    panel = el('section', 'panel');
    panel.id = 'figure-' + figure.id;
    panel.appendChild(el('h3', null, figure.title));
    panel.appendChild(el('p', 'description', figure.description));
    panel.appendChild(el('div', 'chart'));
    panel.appendChild(el('ul', 'notes'));
    document.getElementById('figures').appendChild(panel);
    return panel;
  }

  function chartWidth(container) {
    return Math.max(260, Math.floor(container.clientWidth));
  }

  function renderFigure(figure) {
    var panel = figurePanel(figure);
    var holder = panel.querySelector('.chart');
    var notes = panel.querySelector('.notes');
    notes.replaceChildren();
    figure.notes.forEach(function (note) { notes.appendChild(el('li', null, note)); });
    var existing = state.charts[figure.id];
    if (figure.series.length === 0) {
      if (existing) { existing.destroy(); delete state.charts[figure.id]; }
      holder.replaceChildren(el('div', 'empty', 'No data yet'));
      panel.dataset.series = '0';
      return;
    }
    var data = alignedData(figure);
    var signature = signatureOf(figure);
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

  var resizeObserver = new ResizeObserver(function () {
    Object.keys(state.charts).forEach(function (id) {
      var holder = document.querySelector('#figure-' + id + ' .chart');
      var chart = state.charts[id];
      if (holder && chart && Math.abs(chart.width - chartWidth(holder)) > 2) chart.setSize({ width: chartWidth(holder), height: 300 });
    });
  });
  resizeObserver.observe(document.getElementById('figures'));

  // ---- config and the record feed -----------------------------------------------------------

  function renderConfig(runs, rows) {
    var container = document.getElementById('config');
    var table = el('table');
    var head = el('tr');
    head.appendChild(el('th', null, 'setting'));
    runs.forEach(function (run) { head.appendChild(el('th', null, run.label)); });
    var thead = el('thead');
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el('tbody');
    rows.forEach(function (row) {
      var tr = el('tr', runs.length > 1 && row.differs ? 'differs' : null);
      var key = el('td');
      key.appendChild(el('code', null, row.key));
      tr.appendChild(key);
      row.values.forEach(function (value) {
        var cell = el('td');
        cell.appendChild(el('code', null, value === null ? '—' : value));
        tr.appendChild(cell);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    var scroll = el('div', 'scroll');
    scroll.appendChild(table);
    container.replaceChildren(scroll);
  }

  function describeRecord(record) {
    if (record.type === 'update') return record.agent + ': batch reward ' + number(record.batchRewardMean) + ', KL ' + number(record.kl) + (record.inRegion ? '' : ' (out of region)') + ', certificate ' + number(record.certificate);
    if (record.type === 'stage') return 'reward ' + number(record.rewardBefore) + ' → ' + number(record.rewardAfter) + (record.regression ? ' — regression' : '');
    if (record.type === 'eval') return 'eval accuracy ' + percent(record.accuracy) + ' (n=' + record.count + ')';
    if (record.type === 'swap') return record.agent + ': ' + record.fromModel + ' → ' + record.toModel;
    return '';
  }

  function renderFeed() {
    var container = document.getElementById('feed');
    var table = el('table');
    var head = el('tr');
    ['run', 'record', 'stage', 'generated tokens', 'what'].forEach(function (title) { head.appendChild(el('th', null, title)); });
    table.appendChild(head);
    state.feed.slice(-12).reverse().forEach(function (entry) {
      var tr = el('tr');
      tr.appendChild(el('td', null, entry.run));
      tr.appendChild(el('td', null, entry.record.type));
      tr.appendChild(el('td', 'number', entry.record.stage));
      tr.appendChild(el('td', 'number', typeof entry.record.generatedTokens === 'number' ? entry.record.generatedTokens.toLocaleString('en-US') : ''));
      tr.appendChild(el('td', null, describeRecord(entry.record)));
      table.appendChild(tr);
    });
    var scroll = el('div', 'scroll');
    scroll.appendChild(table);
    container.replaceChildren(scroll);
  }

  // ---- polling ----------------------------------------------------------------------------

  function setLive(ok, text) {
    var live = document.getElementById('live');
    live.className = 'live ' + (ok ? 'ok' : 'error');
    document.getElementById('live-text').textContent = text;
  }

  function loadOverview() {
    return getJson('/api/overview').then(function (overview) {
      state.overview = overview;
      state.pollMs = overview.pollIntervalMs || state.pollMs;
      state.statuses = overview.runs.map(function (run) { return run.status; }).join(',');
      renderRuns(overview.runs);
      overview.figures.forEach(renderFigure);
      renderConfig(overview.runs, overview.config);
    });
  }

  /** New metrics lines of every run since the last poll; true when anything changed. */
  function pollMetrics() {
    var runs = state.overview.runs;
    return Promise.all(runs.map(function (run) {
      return getJson('/api/runs/' + run.id + '/metrics?since=' + (state.offsets[run.id] || 0)).then(function (chunk) {
        if (chunk.reset) state.feed = state.feed.filter(function (entry) { return entry.runId !== run.id; });
        chunk.records.forEach(function (record) { state.feed.push({ runId: run.id, run: run.label, record: record }); });
        state.offsets[run.id] = chunk.nextOffset;
        return chunk.reset || chunk.records.length > 0;
      });
    })).then(function (changes) {
      if (state.feed.length > 200) state.feed = state.feed.slice(-200);
      return changes.some(Boolean);
    });
  }

  function pollStatuses() {
    return getJson('/api/runs').then(function (runs) {
      return runs.map(function (run) { return run.status; }).join(',') !== state.statuses;
    });
  }

  function start() {
    return loadOverview().then(function () {
      state.offsets = Object.assign({}, state.overview.offsets);
      state.feed = state.overview.recent.slice();
      renderFeed();
      document.body.dataset.ready = 'true';
    });
  }

  function tick() {
    var step = state.overview ? Promise.all([pollMetrics(), pollStatuses()]) : start().then(function () { return [false, false]; });
    step
      .then(function (changes) {
        var changed = changes[0] || changes[1];
        if (changes[0]) renderFeed();
        return changed ? loadOverview() : null;
      })
      .then(function () {
        state.polls++;
        setLive(true, 'live · updated ' + new Date().toLocaleTimeString());
      })
      .catch(function (error) {
        setLive(false, 'connection lost, retrying (' + error.message + ')');
      })
      .then(function () { setTimeout(tick, state.pollMs); });
  }

  tick();
`;

/** Charts first: the page part starts polling as soon as it has run. */
export const dashboardScript = `(function () {\n  'use strict';\n${chartFunctions}\n${pageFunctions}\n})();\n`;
