import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { startServeProcess, type ServeProcess } from '../../cli/test-support/serve-process.js';
import { loadModel } from '../../models/load.js';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import {
  conformanceScript,
  preparePythonSdk,
  sharedDirectory,
  type PythonSdk,
} from './test-support/python-sdk.js';

/**
 * The official Tinker Python SDK (0.25.0, from shared/vendor) drives a real `teamtr serve
 * --tinker` process through a cookbook-style loop, public API only (see
 * scripts/tinker-sdk-conformance.py for every check), then the server restarts on the same
 * --state-dir and the SDK samples from a sampler path saved before the restart.
 */

const shared = sharedDirectory();
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-tinker-sdk-'));
after(() => rmSync(root, { recursive: true, force: true }));

function runPython(
  sdk: PythonSdk,
  argv: string[],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(sdk.python, [conformanceScript, ...argv], {
      env: { ...process.env, ...sdk.environment, TINKER_API_KEY: 'tml-local-conformance' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

async function startTinker(
  model: string,
  stateDirectory: string,
): Promise<ServeProcess & { url: string }> {
  const server = await startServeProcess(
    ['serve', '--tinker', '--model', model, '--port', '0', '--state-dir', stateDirectory],
    /Tinker API on (http:\/\/127\.0\.0\.1:\d+)/,
  );
  return { ...server, url: server.match[1]! };
}

describe('the official Tinker SDK against teamtr serve --tinker', () => {
  if (!shared) {
    test(
      'skipped: shared/ (with the SDK source in shared/vendor) is not beside this clone',
      {
        skip: `no ${path.join('..', 'shared')} directory (a user's clone); set TEAMTR_SHARED_DIR to run it`,
      },
      () => undefined,
    );
    return;
  }

  test('a cookbook loop, a restart on the same state dir, and sampling a pre-restart path', async () => {
    const started = Date.now();
    const sdk = preparePythonSdk(shared, root);
    const model = path.join(root, 'tiny-qwen');
    writeHuggingFaceFixture(model, { modelType: 'qwen2' });
    const { tokenizer } = await loadModel(model);
    const texts = Array.from({ length: 296 }, (_value, id) =>
      id < tokenizer.vocabSize ? tokenizer.decode([id]) : '',
    );
    const textsFile = path.join(root, 'token-texts.json');
    writeFileSync(textsFile, JSON.stringify(texts));
    const stateDirectory = path.join(root, 'state');
    const stateFile = path.join(root, 'conformance-state.json');

    const first = await startTinker(model, stateDirectory);
    let trained;
    try {
      trained = await runPython(sdk, ['train', first.url, 'tiny-qwen', stateFile, textsFile]);
    } finally {
      assert.equal(await first.stop(), 0, first.stderr());
    }
    assert.equal(trained.code, 0, `${trained.output}\n--- server log ---\n${first.stderr()}`);
    // Every call is logged; the SDK's own routes (config, telemetry) are answered, not 404.
    const log = first.stderr();
    assert.match(log, /POST \/api\/v1\/client\/config 200 \d+ ms/);
    assert.match(log, /POST \/api\/v1\/telemetry 200 \d+ ms/);
    assert.doesNotMatch(log, / 404 \d+ ms/);
    assert.match(log, /no_such_loss/, 'the failed call is in the server log with its reason');

    const second = await startTinker(model, stateDirectory);
    let restarted;
    try {
      restarted = await runPython(sdk, ['restart', second.url, 'tiny-qwen', stateFile]);
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
    }
    assert.equal(restarted.code, 0, `${restarted.output}\n--- server log ---\n${second.stderr()}`);

    const figures = (
      JSON.parse(readFileSync(stateFile, 'utf8')) as {
        figures: { failedCallSeconds: number };
      }
    ).figures;
    // Without the telemetry route the SDK waits its 30 s flush timeout on a failed call; half
    // of that separates the two by far more than any machine's noise.
    assert.ok(figures.failedCallSeconds < 15, `a failed call took ${figures.failedCallSeconds} s`);
    const checks = `${trained.output}${restarted.output}`.match(/^ok /gm)?.length ?? 0;
    process.stdout.write(
      `# Tinker SDK conformance: ${checks} checks with ${JSON.stringify(sdk.versions)}; failed call answered in ${figures.failedCallSeconds.toFixed(2)} s; ${((Date.now() - started) / 1000).toFixed(1)} s in all\n`,
    );
  });
});
