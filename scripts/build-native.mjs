// Builds the native kernel addon at install time. Never fails the install: without a C
// toolchain the pure-TypeScript backend runs and `teamtr` prints a warning saying so.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
if (!existsSync(path.join(root, 'binding.gyp'))) process.exit(0);
if (process.env.TEAMTR_SKIP_NATIVE === '1') {
  console.warn('teamtr: TEAMTR_SKIP_NATIVE=1, not building the native addon');
  process.exit(0);
}

const blasHeaders = ['/usr/include/x86_64-linux-gnu/cblas.h', '/usr/include/cblas.h',
  '/usr/include/aarch64-linux-gnu/cblas.h', '/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h'];
const blasHeader = process.env.TEAMTR_BLAS === 'none' ? undefined : blasHeaders.find((file) => existsSync(file));
const hasOpenBlas = blasHeader !== undefined;
if (process.env.TEAMTR_BLAS === 'none') {
  console.warn('teamtr: TEAMTR_BLAS=none, building the native addon with portable C kernels only');
} else if (!hasOpenBlas) {
  console.warn('teamtr: OpenBLAS headers not found (apt-get install libopenblas-dev); ' +
    'building the native addon with portable C kernels');
}

function nodeGypCommand() {
  if (process.env.npm_config_node_gyp) return [process.execPath, process.env.npm_config_node_gyp];
  try {
    const require = createRequire(import.meta.url);
    return [process.execPath, require.resolve('node-gyp/bin/node-gyp.js')];
  } catch {
    return ['node-gyp'];
  }
}

const [command, ...prefix] = nodeGypCommand();
const args = [...prefix, 'rebuild', `--teamtr_blas=${hasOpenBlas ? 'openblas' : 'none'}`];
if (hasOpenBlas) args.push(`--teamtr_blas_include=${path.dirname(blasHeader)}`);
if (!process.env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) {
  args.push('--nodedir=/usr');
}
const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  console.warn('teamtr: the native addon did not build; the TypeScript backend will be used ' +
    '(slower). Install a C compiler and python3, then run `npm rebuild teamtr`.');
}
process.exit(0);
