import path from 'node:path';
import type { Command } from 'commander';
import { writeReport } from '../../report/write-report.js';

export function register(program: Command): void {
  program
    .command('report')
    .description(
      'write a self-contained HTML report (works offline) and one SVG per figure, for papers and notes',
    )
    .argument('<run-dir...>', 'run directories, or directories of runs (`teamtr compare --out`)')
    .option('--out <dir>', 'output directory (default: <first run>/report)')
    .option('--json', 'print one JSON object (html, figures, runs) on stdout')
    .action(async (directories: string[], flags: { out?: string; json?: boolean }) => {
      const result = await writeReport({ runDirectories: directories, outputDirectory: flags.out });
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ html: result.htmlPath, figures: result.figures, runs: result.runs })}\n`,
        );
        return;
      }
      const empty = result.figures.filter((figure) => !figure.hasData).map((figure) => figure.id);
      const lines = [
        `Report for ${result.runs.length} run${result.runs.length === 1 ? '' : 's'}: ${result.htmlPath}`,
        `  figures (SVG): ${path.dirname(result.figures[0]!.path)}/{${result.figures.map((figure) => figure.id).join(',')}}.svg`,
      ];
      if (empty.length) lines.push(`  no data yet in: ${empty.join(', ')}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
