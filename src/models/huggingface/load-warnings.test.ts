import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { chatPromptIds } from '../chat.js';
import { loadModel } from '../load.js';
import { writeHuggingFaceFixture } from '../test-support/huggingface-fixture.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-load-warnings-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const fresh = () => path.join(root, `dir-${counter++}`);

/** The warnings (code: message) emitted while `action` runs. */
async function warningsDuring(action: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (warning: Error & { code?: string }) =>
    seen.push(`${warning.code}: ${warning.message}`);
  process.on('warning', listener);
  try {
    await action();
    // process.emitWarning delivers on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

describe('what a Hugging Face directory leaves out is said, not silently dropped', () => {
  test('a model without a chat template warns once, at load and when chat prompts are asked for', async () => {
    const directory = fresh();
    writeHuggingFaceFixture(directory, { modelType: 'qwen2', chatTemplate: false });
    let loaded: Awaited<ReturnType<typeof loadModel>> | undefined;
    const atLoad = await warningsDuring(async () => (loaded = await loadModel(directory)));
    assert.deepEqual(atLoad.length, 1);
    assert.match(
      atLoad[0]!,
      new RegExp(
        `^TEAMTR_NO_CHAT_TEMPLATE: ${directory} has no chat template .*prompts are plain text`,
      ),
    );
    const again = await warningsDuring(async () =>
      chatPromptIds(loaded!.tokenizer, [{ role: 'user', content: 'hi' }]),
    );
    assert.deepEqual(again, [], 'said once per directory');
    const withTemplate = fresh();
    writeHuggingFaceFixture(withTemplate, { modelType: 'qwen2' });
    assert.deepEqual(await warningsDuring(() => loadModel(withTemplate)), []);
  });

  test('a sliding window that caps the context is said; one transformers ignores is said too', async () => {
    const mistral = fresh();
    writeHuggingFaceFixture(mistral, { modelType: 'mistral' });
    const capped = await warningsDuring(() => loadModel(mistral));
    assert.match(
      capped.join('\n'),
      /TEAMTR_SLIDING_WINDOW: .*config\.json: sliding_window 48 limits this model to 48 positions \(of max_position_embeddings 64\)/,
    );
    const llama = fresh();
    writeHuggingFaceFixture(llama, {
      modelType: 'llama',
      editConfig: (config) => ({ ...config, sliding_window: 16 }),
    });
    let loaded: Awaited<ReturnType<typeof loadModel>> | undefined;
    const ignored = await warningsDuring(async () => (loaded = await loadModel(llama)));
    assert.match(ignored.join('\n'), /sliding_window 16 is ignored, as transformers ignores it/);
    assert.equal(loaded!.model.config.maxPositions, 64);
  });

  test('sliding layers without a window are refused; Qwen windows that cover no layer do not cap', async () => {
    const layerTypes = fresh();
    writeHuggingFaceFixture(layerTypes, {
      modelType: 'qwen3',
      editConfig: (config) => ({
        ...config,
        layer_types: ['full_attention', 'sliding_attention'],
        sliding_window: null,
      }),
    });
    await assert.rejects(
      loadModel(layerTypes),
      /layer_types: lists "sliding_attention" layers but sliding_window is not set/,
    );
    const allFull = fresh();
    writeHuggingFaceFixture(allFull, {
      modelType: 'qwen2',
      editConfig: (config) => ({ ...config, use_sliding_window: true, max_window_layers: 2 }),
    });
    assert.equal((await loadModel(allFull)).model.config.maxPositions, 64);
    const someSliding = fresh();
    writeHuggingFaceFixture(someSliding, {
      modelType: 'qwen2',
      editConfig: (config) => ({ ...config, use_sliding_window: true, max_window_layers: 1 }),
    });
    assert.equal((await loadModel(someSliding)).model.config.maxPositions, 32);
  });
});
