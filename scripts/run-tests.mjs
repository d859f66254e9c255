// Runs every co-located *.test.ts under src/ with Node's own test runner (Node 20 has no glob
// support in --test, hence this file). Extra arguments filter test files by substring.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const filters = process.argv.slice(2);

function collect(directory) {
  const found = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) found.push(...collect(full));
    else if (entry.name.endsWith('.test.ts')) found.push(full);
  }
  return found;
}

const files = collect(path.join(root, 'src'))
  .map((file) => path.relative(root, file))
  .filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', ...files],
  { cwd: root, stdio: 'inherit', env: { ...process.env, TEAMTR_QUIET_BACKEND: '1' } },
);
process.exit(result.status ?? 1);
