import path from 'node:path';
import { writeFileAtomic } from '../io/atomic.js';
import { FileFormatError } from '../util/errors.js';

/** The file names `teamtr theory` writes inside its output directory. */
export const theoryFileNames = {
  report: 'report.md',
  plot: 'scaling.svg',
  results: 'results.json',
} as const;

export interface TheoryOutputs {
  readonly report: string;
  readonly plot: string;
  readonly results: unknown;
}

export interface WrittenTheoryFiles {
  readonly report: string;
  readonly plot: string;
  readonly results: string;
}

async function writeOrExplain(file: string, text: string): Promise<void> {
  try {
    await writeFileAtomic(file, text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new FileFormatError(
      file,
      `could not write it (${reason}); choose another --out directory`,
    );
  }
}

/**
 * Writes the report, the plot and the full results (compact JSON: one record per game) into
 * `directory`, creating it if needed. Each file is written atomically (temp file, then rename),
 * so an interrupted run never leaves a half-written one.
 */
export async function writeTheoryOutputs(
  directory: string,
  outputs: TheoryOutputs,
): Promise<WrittenTheoryFiles> {
  const files = {
    report: path.join(directory, theoryFileNames.report),
    plot: path.join(directory, theoryFileNames.plot),
    results: path.join(directory, theoryFileNames.results),
  };
  await writeOrExplain(files.plot, outputs.plot);
  await writeOrExplain(files.results, `${JSON.stringify(outputs.results)}\n`);
  await writeOrExplain(files.report, outputs.report);
  return files;
}
