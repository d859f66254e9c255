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

// OpenBLAS is loaded at run time when installed (native/src/blas.c), so the build needs no
// BLAS headers; TEAMTR_BLAS=none leaves it out (portable C kernels for every product).
const withoutBlas = process.env.TEAMTR_BLAS === 'none';
if (withoutBlas) {
  console.warn('teamtr: TEAMTR_BLAS=none, building the native addon without OpenBLAS');
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
// Every instruction-set variant of the addon (binding.gyp), compiled on all cores.
const args = [...prefix, 'rebuild', '-j', 'max', `--teamtr_blas=${withoutBlas ? 'none' : 'openblas'}`];
if (!process.env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) {
  args.push('--nodedir=/usr');
}
const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  console.warn('teamtr: the native addon did not build; the TypeScript backend will be used ' +
    '(slower). Install a C compiler and python3, then run `npm rebuild teamtr`.');
}
process.exit(0);
