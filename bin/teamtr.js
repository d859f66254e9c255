#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
if (!existsSync(compiled)) {
  console.error('teamtr: dist/ is missing; run `npm run build` (npm install does it for you).');
  process.exit(1);
}
const { main } = await import(compiled);
process.exitCode = await main(process.argv.slice(2));
