import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { chatPromptIds, hasChatTemplate } from '../models/chat.js';
import { loadModel } from '../models/load.js';
import { pretrain, pretrainOutputName } from './pretrain.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-pretrain-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const config = {
  task: { name: 'arithmetic-chain', difficulty: 1, roles: 2 },
  steps: 6,
  batchSize: 8,
  seed: 3,
  model: {
    architecture: 'llama',
    vocabSize: 100,
    hiddenSize: 16,
    layers: 1,
    heads: 2,
    intermediateSize: 32,
    maxPositions: 64,
    tieEmbeddings: true,
  },
};

describe('pretrain', () => {
  test('is deterministic from its seed, writes one model per role plus a shared one, and they load', async () => {
    const first = await pretrain(config, path.join(directory, 'first'));
    const second = await pretrain(config, path.join(directory, 'second'));
    assert.deepEqual(
      first.directories.map((entry) => path.basename(entry)),
      ['role-0', 'role-1', 'shared'],
    );
    first.directories.forEach((entry, index) => {
      const bytes = (folder: string) => readFileSync(path.join(folder, 'model.safetensors'));
      assert.ok(
        bytes(entry).equals(bytes(second.directories[index]!)),
        `${entry} differs between two runs`,
      );
    });
    const other = await pretrain({ ...config, seed: 4 }, path.join(directory, 'other'));
    assert.ok(
      !readFileSync(path.join(other.directories[0]!, 'model.safetensors')).equals(
        readFileSync(path.join(first.directories[0]!, 'model.safetensors')),
      ),
    );
    const loaded = await loadModel(first.directories[2]!);
    assert.equal(loaded.model.config.hiddenSize, 16);
    assert.equal(loaded.tokenizer.vocabSize, 100);
  });

  test('long-turn models: sized to the longest context of the task, per role only when asked', async () => {
    const longTurns = {
      task: { name: 'worked-chain', agents: 2, steps: 6 },
      shared: false,
      steps: 2,
      batchSize: 4,
      seed: 1,
    };
    const first = await pretrain(longTurns, path.join(directory, 'long-first'));
    const second = await pretrain(longTurns, path.join(directory, 'long-second'));
    assert.deepEqual(
      first.directories.map((entry) => path.basename(entry)),
      ['role-0', 'role-1'],
    );
    const bytes = (folder: string) => readFileSync(path.join(folder, 'model.safetensors'));
    assert.ok(bytes(first.directories[1]!).equals(bytes(second.directories[1]!)));
    // Prompt (18) + two turns of ≤ 42 with tags and newlines, a turn's slack, rounded to 32.
    const loaded = await loadModel(first.directories[1]!);
    assert.equal(loaded.model.config.maxPositions, 160);
  });

  test('bad settings are clear errors', async () => {
    await assert.rejects(
      pretrain({ ...config, mistakeRate: 2 }, path.join(directory, 'x')),
      /mistakeRate/,
    );
    await assert.rejects(
      pretrain(
        { ...config, task: { name: 'jsonl', path: '/nonexistent.jsonl', verifier: 'exact' } },
        path.join(directory, 'y'),
      ),
      /nonexistent/,
    );
  });

  test('a list of tasks: role r learns role r of each, so a role can pass on in one team size and answer in another', async () => {
    const sizes = {
      task: [
        { name: 'convention', agents: 2, digits: 2 },
        { name: 'convention', agents: 3, digits: 2 },
      ],
      shared: false,
      steps: 2,
      batchSize: 4,
      seed: 1,
    };
    const result = await pretrain(sizes, path.join(directory, 'sizes'));
    assert.equal(result.task, 'convention');
    assert.deepEqual(
      result.directories.map((entry) => path.basename(entry)),
      ['role-0', 'role-1', 'role-2'],
    );
    assert.equal(pretrainOutputName(sizes), 'convention');
    assert.equal(pretrainOutputName({}), 'arithmetic-chain');
    assert.equal(pretrainOutputName({ chat: {} }), 'general');
  });

  test('warmStart: each role model starts from the one before it', async () => {
    const still = { ...config, shared: false, steps: 1, learningRate: 1e-12 };
    const weights = async (directoryName: string, role: number) =>
      (await loadModel(path.join(directory, directoryName, `role-${role}`))).model.stateDict();
    await pretrain({ ...still, warmStart: true }, path.join(directory, 'warm'));
    await pretrain(still, path.join(directory, 'cold'));
    const distance = (a: Awaited<ReturnType<typeof weights>>, b: typeof a) =>
      Math.max(
        ...a.map((entry, index) =>
          Math.max(...entry.data.map((value, at) => Math.abs(value - b[index]!.data[at]!))),
        ),
      );
    assert.ok(distance(await weights('warm', 0), await weights('warm', 1)) < 1e-6);
    assert.ok(distance(await weights('cold', 0), await weights('cold', 1)) > 1e-3);
  });

  test('a chat model: one Hugging Face directory with its ChatML template, deterministic', async () => {
    const chat = {
      chat: { name: 'tiny-chat' },
      steps: 3,
      batchSize: 4,
      seed: 2,
      model: { ...config.model, maxPositions: 256 },
    };
    const first = await pretrain(chat, path.join(directory, 'chat-first'));
    const second = await pretrain(chat, path.join(directory, 'chat-second'));
    assert.deepEqual(first.directories, [path.join(directory, 'chat-first')]);
    const weights = (folder: string) => readFileSync(path.join(folder, 'model.safetensors'));
    assert.ok(weights(first.directories[0]!).equals(weights(second.directories[0]!)));
    const { tokenizer, model } = await loadModel(first.directories[0]!);
    assert.ok(hasChatTemplate(tokenizer), 'loads as a chat model');
    assert.equal(model.config.maxPositions, 256);
    const ids = chatPromptIds(tokenizer, [
      { role: 'system', content: 'Add. ' },
      { role: 'user', content: '2+3' },
    ]);
    assert.equal(
      tokenizer.decode(ids),
      '<|im_start|>S:Add. <|im_end|><|im_start|>U:2+3<|im_end|><|im_start|>A:',
    );
    assert.equal(tokenizer.decode([tokenizer.eosId!]), '<|im_end|>', 'a turn ends at <|im_end|>');
    await assert.rejects(
      pretrain({ ...chat, task: { name: 'arithmetic-chain' } }, path.join(directory, 'both')),
      /give either task .* or chat .*, not both/,
    );
  });
});
