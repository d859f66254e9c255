import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runBounded } from '../../util/test-support/bounded-child.js';
import { moduleSystemOf } from './import-module.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-task-module-'));
after(() => rmSync(root, { recursive: true, force: true }));

const problems =
  "{ train: [{ prompt: '1+1', answer: '2' }], eval: [{ prompt: '2+2', answer: '4' }] }";
const typed =
  '({ problem, answer }: { problem: { answer: string }; answer: string }) => (answer === problem.answer ? 1 : 0)';
const untyped = '({ problem, answer }) => (answer === problem.answer ? 1 : 0)';

/** The module a user of each kind of project would write, as `npm init -y` leaves it. */
function moduleSource(extension: string, system: 'module' | 'commonjs'): string {
  const name = `'from-${extension.slice(1)}'`;
  if (extension.endsWith('ts'))
    return `export default { name: ${name}, problems: ${problems}, reward: ${typed} };\n`;
  if (system === 'module')
    return `export default { name: ${name}, problems: ${problems}, reward: ${untyped} };\n`;
  return `module.exports = { name: ${name}, problems: ${problems}, reward: ${untyped} };\n`;
}

const extensions = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];
const projects = {
  commonjs: '{"name": "app", "version": "1.0.0", "type": "commonjs"}',
  module: '{"name": "app", "type": "module"}',
  none: null,
};

describe('task modules load in every kind of project', () => {
  test('the module system follows the extension, then the nearest package.json', () => {
    const directory = path.join(root, 'systems', 'nested');
    mkdirSync(directory, { recursive: true });
    writeFileSync(path.join(root, 'systems', 'package.json'), '{"type": "module"}');
    assert.equal(moduleSystemOf(path.join(directory, 'task.ts')), 'module');
    assert.equal(moduleSystemOf(path.join(directory, 'task.cts')), 'commonjs');
    writeFileSync(path.join(root, 'systems', 'package.json'), '{"name": "x"}');
    assert.equal(moduleSystemOf(path.join(directory, 'task.js')), 'commonjs');
    assert.equal(moduleSystemOf(path.join(directory, 'task.mjs')), 'module');
  });

  test('.ts .mts .cts .js .mjs .cjs in a CommonJS project, an ES module project and none', async () => {
    const files: string[] = [];
    for (const [kind, manifest] of Object.entries(projects))
      for (const extension of extensions) {
        // One directory per module: tsx resolves task.js to a task.ts beside it.
        const directory = path.join(root, kind, extension.slice(1));
        mkdirSync(directory, { recursive: true });
        if (manifest) writeFileSync(path.join(directory, 'package.json'), manifest);
        const file = path.join(directory, `task${extension}`);
        writeFileSync(file, moduleSource(extension, moduleSystemOf(file)));
        files.push(file);
      }
    // As the task worker runs from source: tsx's ES module hooks registered, nothing else.
    const result = await runBounded({
      setup: `const { register } = await import('tsx/esm/api'); register(); const { importTaskExport } = await import(${JSON.stringify(new URL('./import-module.ts', import.meta.url).href)});`,
      body: `for (const file of ${JSON.stringify(files)}) { try { const task = await importTaskExport(file, file); console.log(task.name, task.reward({ problem: { answer: '2' }, answer: '2' })); } catch (error) { console.log('failed ' + error.message); } }`,
      milliseconds: 20_000,
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    const expected = files.map((file) => `from-${path.extname(file).slice(1)} 1`);
    assert.deepEqual(result.stdout.trim().split('\n'), expected, result.stderr);
  });
});
