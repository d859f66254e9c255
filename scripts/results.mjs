// `npm run results`: renders docs/results.md from the result files in docs/results/*.json
// (written by the commands that measured them; see src/report/result-file.ts).
//   --check   write nothing; exit 1 when docs/results.md is not what the files render to
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readResultDirectory } from '../src/report/result-file.ts';
import { renderResultsPage } from '../src/report/results-page.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const directory = path.join(root, 'docs', 'results');
const page = path.join(root, 'docs', 'results.md');
mkdirSync(directory, { recursive: true });
let text;
try {
  text = renderResultsPage(await readResultDirectory(directory));
} catch (error) {
  console.error(`npm run results: ${error.message}`);
  process.exit(1);
}
if (process.argv.includes('--check')) {
  if (!existsSync(page) || readFileSync(page, 'utf8') !== text) {
    console.error('docs/results.md is stale: run `npm run results` and commit it');
    process.exit(1);
  }
} else {
  writeFileSync(page, text);
  console.log(`docs/results.md: ${path.relative(root, directory)}/*.json rendered`);
}
