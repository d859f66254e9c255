/**
 * The charting half of the dashboard's browser script: turns the server's figures (report/figure.ts)
 * into uPlot options and data. Function declarations only, spliced into the same closure as
 * script.ts, whose helpers (number, safeColor) they use.
 */
export const chartFunctions = String.raw`
  function decimalsFor(step) {
    for (var decimals = 0; decimals <= 12; decimals++) {
      var scaled = step * Math.pow(10, decimals);
      if (Math.abs(scaled - Math.round(scaled)) <= 1e-9 * scaled) return decimals;
    }
    return 12;
  }

  /** Axis labels in one style per axis (as the report's SVG axes): 5k, 0.25, 2.5e-7. */
  function tickLabels(splits) {
    var step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 1;
    var largest = Math.max.apply(null, splits.map(Math.abs).concat([0]));
    var unit = largest >= 1e7 || (largest >= 1e6 && step >= 1e6) ? [1e6, 'M'] : largest >= 1e4 || (largest >= 1e3 && step >= 1e3) ? [1e3, 'k'] : null;
    return splits.map(function (value) {
      if (value === 0 || step === 0) return value === 0 ? '0' : String(value);
      if (unit) return Number((value / unit[0]).toFixed(decimalsFor(step / unit[0]))) + unit[1];
      if (step < 1e-4) return value.toExponential(Math.max(0, Math.floor(Math.log10(Math.abs(value))) - Math.floor(Math.log10(step))));
      return value.toFixed(decimalsFor(step));
    });
  }

  // ---- figures ----------------------------------------------------------------------------

  /** uPlot wants one shared x array and one y array per series (null where a series has no point). */
  function alignedData(figure) {
    var xs = [];
    if (figure.xCategories) {
      for (var c = 0; c < figure.xCategories.length; c++) xs.push(c);
    } else {
      var seen = {};
      figure.series.forEach(function (series) {
        series.points.forEach(function (point) {
          if (!seen[point.x]) { seen[point.x] = true; xs.push(point.x); }
        });
      });
      xs.sort(function (a, b) { return a - b; });
    }
    var index = {};
    xs.forEach(function (x, i) { index[x] = i; });
    var data = [xs];
    figure.series.forEach(function (series) {
      var ys = xs.map(function () { return null; });
      series.points.forEach(function (point) { ys[index[point.x]] = point.y; });
      data.push(ys);
    });
    return data;
  }

  function yRange(figure) {
    var hasBars = figure.series.some(function (series) { return series.style === 'bars'; });
    return function (u, min, max) {
      var low = min, high = max;
      if (figure.yMin !== undefined) low = Math.min(low, figure.yMin);
      if (figure.yMax !== undefined) high = Math.max(high, figure.yMax);
      if (hasBars) { low = Math.min(low, 0); high = Math.max(high, 0); }
      if (!isFinite(low) || !isFinite(high)) { low = 0; high = 1; }
      if (low === high) { var pad = low === 0 ? 1 : Math.abs(low) * 0.1; return [low - (figure.yMin === low ? 0 : pad), high + pad]; }
      var margin = 0.06 * (high - low);
      return [figure.yMin === low ? low : low - margin, high + margin];
    };
  }

  function xRange(figure) {
    if (figure.xCategories) return function () { return [-0.5, figure.xCategories.length - 0.5]; };
    return function (u, min, max) {
      if (min === max) { var pad = figure.xIntegers || min === 0 ? 1 : Math.abs(min) * 0.1; return [min - pad, max + pad]; }
      var margin = 0.02 * (max - min);
      return [min - margin, max + margin];
    };
  }

  function seriesOptions(series, barIndex, barCount) {
    var color = safeColor(series.color);
    if (series.style === 'bars') {
      var width = 0.8 / barCount;
      return {
        label: series.label, stroke: color, fill: color, width: 0, points: { show: false },
        paths: uPlot.paths.bars({
          disp: {
            x0: { unit: 1, values: function (u) { return u.data[0].map(function (x) { return x - 0.4 + barIndex * width; }); } },
            size: { unit: 1, values: function () { return [width * 0.92]; } },
          },
        }),
      };
    }
    if (series.style === 'points') {
      return { label: series.label, stroke: color, fill: color, paths: function () { return null; }, points: { show: true, size: 7, width: 1, stroke: '#ffffff', fill: color } };
    }
    return {
      label: series.label, stroke: color, width: 2, spanGaps: true, dash: series.dashed ? [6, 4] : undefined,
      points: { show: Boolean(series.markers) || series.points.length === 1, size: 6, fill: color },
    };
  }

  var axisFont = '11px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';
  var labelFont = '500 12px system-ui, -apple-system, Segoe UI, Roboto, sans-serif';

  function chartOptions(figure, width) {
    var barCount = figure.series.filter(function (series) { return series.style === 'bars'; }).length;
    var barIndex = 0;
    var series = [{ label: figure.xLabel, value: function (u, v) { return v === null ? '' : figure.xCategories ? figure.xCategories[v] : number(v); } }];
    figure.series.forEach(function (entry) {
      var options = seriesOptions(entry, barIndex, barCount);
      if (entry.style === 'bars') barIndex++;
      options.value = function (u, v) { return v === null || v === undefined ? '—' : number(v); };
      series.push(options);
    });
    var xAxis = { label: figure.xLabel, stroke: '#6b7280', font: axisFont, labelFont: labelFont, grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d1d5db' } };
    if (figure.xCategories) {
      xAxis.splits = function () { return figure.xCategories.map(function (_, i) { return i; }); };
      xAxis.values = function (u, splits) { return splits.map(function (v) { return figure.xCategories[v] || ''; }); };
      xAxis.grid = { show: false };
    } else {
      xAxis.values = function (u, splits) { return tickLabels(splits); };
      if (figure.xIntegers) xAxis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
    }
    return {
      width: width, height: 300, series: series,
      scales: { x: { time: false, range: xRange(figure) }, y: { range: yRange(figure) } },
      axes: [xAxis, { label: figure.yLabel, stroke: '#6b7280', font: axisFont, labelFont: labelFont, size: 64, grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d1d5db' }, values: function (u, splits) { return tickLabels(splits); } }],
      legend: { live: false },
      cursor: { drag: { x: true, y: false } },
    };
  }

  function signatureOf(figure) {
    return JSON.stringify([figure.series.map(function (s) { return [s.label, s.style, s.color]; }), figure.xCategories || null]);
  }
`;
