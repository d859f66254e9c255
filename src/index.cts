/**
 * The CommonJS entry (`require('teamtr')`, the package's "require" export condition): the ES
 * module build, loaded through Node's own CommonJS `require`. Node 20 loads an ES module from
 * `require` itself, but a `require` handed to code that a loader hook compiles (`npx tsx
 * file.cts`) fails on it (ERR_VM_MODULE_LINK_FAILURE); the `require` that `createRequire`
 * makes here is always Node's own.
 */
import { createRequire } from 'node:module';

export = createRequire(__filename)('./index.js') as typeof import('./index.js', {
  with: { 'resolution-mode': 'import' },
});
