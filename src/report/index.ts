/**
 * Reports of training runs: the figures of docs/method.md §5 as plain data (shared with the
 * dashboard), a small SVG chart renderer, and a self-contained HTML report writer.
 */
export type { Figure, FigurePoint, FigureSeries, SeriesStyle } from '../figures/figure.js';
export { buildFigures, figureIds } from './figures.js';
export { renderSvgChart, type SvgChartOptions } from '../figures/svg.js';
export { writeReport, type WriteReportOptions, type WriteReportResult } from './write-report.js';
export { loadRuns, resolveRunDirectories, type RunView } from './runs.js';
export { describeRun, type RunOverview } from './run-overview.js';
export { readMetricsSince, type MetricsChunk } from './metrics-file.js';
