import path from 'node:path';
import { writeFileAtomic } from '../io/atomic.js';
import { configTable } from './config-table.js';
import { buildFigures } from './figures.js';
import { renderReportHtml } from './html.js';
import { describeRun } from './run-overview.js';
import { loadRuns, resolveRunDirectories } from './runs.js';
import { renderSvgChart } from '../figures/svg.js';

export interface WriteReportOptions {
  /** Run directories, or directories of runs (`teamtr compare --out`). */
  runDirectories: readonly string[];
  /** Where index.html and figures/*.svg go. @default <first run>/report */
  outputDirectory?: string;
}

export interface WriteReportResult {
  htmlPath: string;
  /** One SVG per figure, in page order. */
  figures: Array<{ id: string; title: string; path: string; hasData: boolean }>;
  runs: string[];
}

/** Writes a self-contained HTML report and one SVG file per figure. */
export async function writeReport(options: WriteReportOptions): Promise<WriteReportResult> {
  const directories = await resolveRunDirectories(options.runDirectories);
  const runs = await loadRuns(directories);
  const outputDirectory = path.resolve(
    options.outputDirectory ?? path.join(directories[0]!, 'report'),
  );
  const figures = buildFigures(runs).map((figure) => ({ figure, svg: renderSvgChart(figure) }));
  const written: WriteReportResult['figures'] = [];
  for (const { figure, svg } of figures) {
    const figurePath = path.join(outputDirectory, 'figures', `${figure.id}.svg`);
    await writeFileAtomic(figurePath, svg);
    written.push({
      id: figure.id,
      title: figure.title,
      path: figurePath,
      hasData: figure.series.length > 0,
    });
  }
  const htmlPath = path.join(outputDirectory, 'index.html');
  const html = renderReportHtml({
    runs: runs.map(describeRun),
    figures,
    config: configTable(runs.map((run) => run.config)),
  });
  await writeFileAtomic(htmlPath, html);
  return { htmlPath, figures: written, runs: directories };
}
