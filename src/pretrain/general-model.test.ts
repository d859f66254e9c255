import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import YAML from 'yaml';
import { chatPromptIds, hasChatTemplate } from '../models/chat.js';
import { builtinModelsDirectory, loadModel } from '../models/load.js';
import { pretrainConfigSchema } from './config.js';

// The shipped general chat model (models/general). Rebuilding it bit for bit takes
// `teamtr pretrain -c configs/pretrain-general.yaml` (many minutes): not run here.
describe('the built-in general model', () => {
  test('builtin:general loads as a chat model whose template renders a team member’s view', async () => {
    const { model, tokenizer, source } = await loadModel('builtin:general');
    assert.equal(source, path.join(builtinModelsDirectory(), 'general'));
    assert.ok(hasChatTemplate(tokenizer), 'it has a chat template');
    const ids = chatPromptIds(tokenizer, [
      { role: 'system', content: 'Answer. ' },
      { role: 'user', content: '12+34' },
      { role: 'user', content: 'solver: 46' },
    ]);
    assert.equal(
      tokenizer.decode(ids),
      '<|im_start|>S:Answer. <|im_end|><|im_start|>U:12+34<|im_end|>' +
        '<|im_start|>U:solver: 46<|im_end|><|im_start|>A:',
    );
    assert.equal(tokenizer.decode([tokenizer.eosId!]), '<|im_end|>', 'a turn ends at <|im_end|>');
    // A task in code gets 2,048 characters a turn by default: the context must hold them.
    assert.ok(model.config.maxPositions >= 2048 + ids.length, `${model.config.maxPositions}`);
    model.destroy();
  });

  test('the shipped model records the shipped config it was pretrained with', () => {
    const root = path.join(builtinModelsDirectory(), '..');
    const configText = readFileSync(path.join(root, 'configs', 'pretrain-general.yaml'), 'utf8');
    const shipped = pretrainConfigSchema.parse(YAML.parse(configText));
    const record = JSON.parse(
      readFileSync(path.join(root, 'models', 'general', 'teamtr-pretrain.json'), 'utf8'),
    ) as { pretrain: Record<string, unknown> };
    const { finalLoss, ...settings } = record.pretrain;
    assert.deepEqual(settings, shipped);
    assert.ok(typeof finalLoss === 'number' && Number.isFinite(finalLoss), `${finalLoss}`);
  });
});
