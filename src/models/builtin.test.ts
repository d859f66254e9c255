import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  builtinModelsDirectory,
  loadModel,
  resolveModelSpec,
  userModelsDirectory,
} from './load.js';

const cache = mkdtempSync(path.join(os.tmpdir(), 'teamtr-cache-'));
const previous = process.env.XDG_CACHE_HOME;
after(() => {
  if (previous === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = previous;
  rmSync(cache, { recursive: true, force: true });
});

describe('built-in models', () => {
  test('shipped ones come from the package, ones pretrain built for an installation from the user cache', async () => {
    process.env.XDG_CACHE_HOME = cache;
    assert.equal(userModelsDirectory(), path.join(cache, 'teamtr', 'models'));
    assert.equal(
      resolveModelSpec('builtin:arithmetic-chain/role-0'),
      path.join(builtinModelsDirectory(), 'arithmetic-chain', 'role-0'),
    );
    cpSync(
      path.join(builtinModelsDirectory(), 'arithmetic-chain', 'role-1'),
      path.join(userModelsDirectory(), 'built-here', 'role-0'),
      { recursive: true },
    );
    assert.equal(
      resolveModelSpec('builtin:built-here/role-0'),
      path.join(userModelsDirectory(), 'built-here', 'role-0'),
    );
    const loaded = await loadModel('builtin:built-here/role-0');
    assert.equal(loaded.source, path.join(userModelsDirectory(), 'built-here', 'role-0'));
    loaded.model.destroy();
    await assert.rejects(
      loadModel('builtin:nowhere/role-0'),
      /run `teamtr pretrain` to build the built-in models/,
    );
  });
});
