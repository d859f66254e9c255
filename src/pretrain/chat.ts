import path from 'node:path';
import { writeJsonAtomic } from '../io/atomic.js';
import { chatPromptIds } from '../models/chat.js';
import { exportHuggingFaceModel, huggingFaceTokenizerFiles } from '../models/huggingface/export.js';
import { TransformerLM } from '../nn/transformer.js';
import { CharTokenizer, defaultCharAlphabet } from '../tokenizer/char.js';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { RandomGenerator } from '../util/random.js';
import { sampleChatExchange } from './chat-skills.js';
import { fitModel } from './fit.js';
import type { PretrainConfig, PretrainProgress, PretrainResult } from './config.js';

/**
 * The built-in general model: one tiny character-level chat model, pretrained on a mixture of
 * short text tasks (chat-skills.ts) rendered through its own chat template, and saved as a
 * Hugging Face directory, so that it plays any role of a task written in code the way an
 * instruct model does (role prompt → system message, problem → user message, other agents'
 * turns → user messages, the turn ends at <|im_end|>).
 */

/** One token per printable ASCII character and the newline, and the chat template's specials. */
const characters = new CharTokenizer({
  alphabet: defaultCharAlphabet,
  specialTokens: { pad: '<pad>', bos: '<|im_start|>', eos: '<|im_end|>', unk: '<unk>' },
});

/**
 * ChatML with one-letter role names and no newlines around them (S:, U:, A:; other roles by
 * name): the same structure in a third of the tokens, which the tiny model reads faster.
 */
export const chatTemplate =
  '{% for message in messages %}<|im_start|>' +
  "{% if message.role == 'system' %}S{% elif message.role == 'user' %}U" +
  "{% elif message.role == 'assistant' %}A{% else %}{{ message.role }}{% endif %}" +
  ':{{ message.content }}<|im_end|>{% endfor %}' +
  '{% if add_generation_prompt %}<|im_start|>A:{% endif %}';

/**
 * The tokenizer: teamtr's character tokenizer as Hugging Face files (a BPE model with no
 * merges), with <|im_start|> and <|im_end|> as its BOS and EOS, no BOS prepended (the template
 * opens every message with <|im_start|>) and the template above.
 */
export function chatTokenizer(): HuggingFaceTokenizer {
  const files = huggingFaceTokenizerFiles(characters);
  return new HuggingFaceTokenizer(
    { ...files.tokenizer, post_processor: null },
    { ...files.config, add_bos_token: false, model_max_length: 4096, chat_template: chatTemplate },
    'general chat tokenizer',
  );
}

/**
 * The general model's shape: about 0.8 million parameters (3.2 MB). Rotary positions cost no
 * parameters, so it takes 4,096 of them: a task written in code gets 2,048 characters a turn by
 * default, and that budget fits after a prompt of up to about 2,000 tokens.
 */
export function defaultChatModelConfig(vocabSize: number) {
  return {
    architecture: 'llama' as const,
    vocabSize,
    hiddenSize: 128,
    layers: 4,
    heads: 4,
    kvHeads: 2,
    intermediateSize: 352,
    maxPositions: 4096,
    tieEmbeddings: true,
  };
}

/** Trains the general chat model and saves it as a Hugging Face directory at `outputDirectory`. */
export async function pretrainChatModel(
  config: PretrainConfig & { chat: { name: string } },
  outputDirectory: string,
  onProgress?: (progress: PretrainProgress) => void,
): Promise<PretrainResult> {
  const { name } = config.chat;
  const tokenizer = chatTokenizer();
  const endOfTurn = tokenizer.eosId!;
  const random = new RandomGenerator(`${config.seed}/pretrain/chat/${name}`);
  const model = new TransformerLM(
    config.model ?? defaultChatModelConfig(tokenizer.vocabSize),
    random.split('init'),
  );
  const finalLoss = fitModel(model, random, {
    steps: config.steps,
    batchSize: config.batchSize,
    learningRate: config.learningRate,
    padId: tokenizer.padId!,
    sample: () => {
      const exchange = sampleChatExchange(random, config.mistakeRate);
      return {
        input: chatPromptIds(tokenizer, exchange.messages),
        target: [...tokenizer.encode(exchange.reply), endOfTurn],
      };
    },
    onProgress: (step, loss) =>
      onProgress?.({ model: name, index: 0, models: 1, step, steps: config.steps, loss }),
  });
  await exportHuggingFaceModel(model, tokenizer, outputDirectory);
  await writeJsonAtomic(path.join(outputDirectory, 'teamtr-pretrain.json'), {
    pretrain: { ...config, finalLoss },
  });
  model.destroy();
  return { task: name, directories: [outputDirectory], finalLosses: [finalLoss] };
}
