import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const project = mkdtempSync(path.join(os.tmpdir(), 'teamtr-consumer-'));
after(() => rmSync(project, { recursive: true, force: true }));

describe('the package as a dependency', () => {
  test('a CommonJS project can require it, and an ES module import it', () => {
    assert.ok(existsSync(path.join(root, 'dist', 'index.js')), 'npm run build first (npm ci does)');
    mkdirSync(path.join(project, 'node_modules'));
    symlinkSync(root, path.join(project, 'node_modules', 'teamtr'), 'dir');
    writeFileSync(path.join(project, 'package.json'), '{"name":"consumer","type":"commonjs"}');
    writeFileSync(
      path.join(project, 'use.cjs'),
      "const teamtr = require('teamtr'); console.log([typeof teamtr.train, typeof teamtr.defineTask].join(' '));",
    );
    writeFileSync(
      path.join(project, 'use.mjs'),
      "import { train, openRun } from 'teamtr'; console.log([typeof train, typeof openRun].join(' '));",
    );
    // What the CLI's serve, dashboard, report and export commands run is public API too.
    writeFileSync(
      path.join(project, 'applications.mjs'),
      "import * as teamtr from 'teamtr'; console.log(['startServer', 'modelEndpoint', 'teamEndpoint', " +
        "'startDashboard', 'writeReport', 'exportHuggingFaceModel'].map((name) => typeof teamtr[name]).join(' '));",
    );
    writeFileSync(
      path.join(project, 'use.cts'),
      "const teamtr = require('teamtr');\nconsole.log([typeof teamtr.train, typeof teamtr.defineTask].join(' '));\n",
    );
    const run = (file: string) =>
      execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' }).trim();
    assert.equal(run('use.cjs'), 'function function');
    assert.equal(run('use.mjs'), 'function function');
    // `npx tsx use.cts`: the loader hook hands the file a require of its own, which cannot load
    // an ES module on Node 20; the "require" condition's CommonJS entry loads it with Node's.
    const tsx = path.join(root, 'node_modules', '.bin', 'tsx');
    assert.equal(
      execFileSync(tsx, ['use.cts'], { cwd: project, encoding: 'utf8' }).trim(),
      'function function',
    );
    assert.equal(run('applications.mjs'), Array(6).fill('function').join(' '));
  });
});

describe('the published declarations', () => {
  test("carry the config schema's field docs, so editors show them", () => {
    // scripts/schema-docs.mjs (run by `npm run build`) copies them from the config schema.
    const declarations = readFileSync(
      path.join(root, 'dist', 'trainer', 'config', 'train-config.d.ts'),
      'utf8',
    );
    assert.match(
      declarations,
      /\/\*\* Trajectories per prompt: the group whose rewards give each other's baseline\. \*\/\n\s+groupSize: z\.ZodDefault<z\.ZodNumber>;/,
    );
    assert.match(
      declarations,
      /\* δ: the largest mean token-level KL[^]*?\*\/\n\s+delta: z\.ZodDefault/,
    );
    // What an editor shows on hover in a config written against the published types.
    const file = path.join(root, 'editor-hover.ts');
    const code =
      "import type { TrainConfigInput } from './dist/index.js';\n" +
      'export const config: TrainConfigInput = { rollout: { groupSize: 8 } };\n';
    const service = ts.createLanguageService({
      getScriptFileNames: () => [file],
      getScriptVersion: () => '1',
      getScriptSnapshot: (name) => {
        const text = name === file ? code : ts.sys.readFile(name);
        return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
      },
      getCurrentDirectory: () => root,
      getCompilationSettings: () => ({
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
      }),
      getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
      fileExists: (name) => name === file || ts.sys.fileExists(name),
      readFile: (name) => (name === file ? code : ts.sys.readFile(name)),
    });
    const hover = service.getQuickInfoAtPosition(file, code.indexOf('groupSize') + 1);
    assert.equal(
      ts.displayPartsToString(hover?.documentation ?? []),
      "Trajectories per prompt: the group whose rewards give each other's baseline.",
    );
    // A field of a schema used inside another is documented there too (agents[].delta).
    assert.ok(
      (declarations.match(/Per-agent trust-region radius\. @default trustRegion\.delta/g) ?? [])
        .length >= 2,
    );
  });
});

/** The files `npm pack` puts in the tarball. */
function packedFiles(): string[] {
  const [report] = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  ) as Array<{ files: Array<{ path: string }> }>;
  return report!.files.map((file) => file.path);
}

describe('the packed package', () => {
  test('ships the built-in models, configs and docs, and no test code', () => {
    const files = packedFiles();
    for (const needed of [
      'models/arithmetic-chain/role-0/model.safetensors',
      'models/arithmetic-chain/shared/tokenizer.json',
      'models/convention/role-7/model.safetensors',
      'models/general/model.safetensors',
      'models/general/tokenizer.json',
      'models/general/tokenizer_config.json',
      'models/general/config.json',
      'configs/demo.yaml',
      'configs/pretrain-general.yaml',
      'docs/method.md',
      'dist/index.js',
      'bin/teamtr.js',
    ])
      assert.ok(files.includes(needed), `${needed} is packed`);
    const testCode = files.filter((file) =>
      /\.test\.|test-support|backend\/testing|backend\.suite/.test(file),
    );
    assert.deepEqual(testCode, []);
  });

  test('ships no script that needs the sources, no source map and every export target', () => {
    const files = packedFiles();
    // The install script is the one script a user's `npm i` runs; the repository's others
    // import ../src/*.ts, which is not shipped.
    assert.deepEqual(
      files.filter((file) => file.startsWith('scripts/')),
      ['scripts/build-native.mjs'],
    );
    const importsSources = files.filter(
      (file) =>
        /\.(m|c)?js$/.test(file) &&
        /(from|import\(|require\()\s*['"][^'"]*(\/src\/|\.ts['"])/.test(
          readFileSync(path.join(root, file), 'utf8'),
        ),
    );
    assert.deepEqual(importsSources, []);
    // Maps would name src/*.ts files the package does not hold.
    assert.deepEqual(
      files.filter((file) => file.endsWith('.map')),
      [],
    );
    assert.deepEqual(
      files.filter((file) => /fixture/.test(file) && !file.startsWith('dist/')),
      [],
    );
    const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
      bin: Record<string, string>;
    };
    const targets = JSON.stringify(manifest.exports).match(/"\.\/[^"]+"/g) ?? [];
    for (const target of [
      ...targets.map((quoted) => quoted.slice(3, -1)),
      ...Object.values(manifest.bin),
    ])
      assert.ok(files.includes(target), `${target} (package.json) is packed`);
  });
});
