import path from 'node:path';
import { writeJsonAtomic } from '../io/atomic.js';
import { chatPromptIds } from '../models/chat.js';
import { exportHuggingFaceModel } from '../models/huggingface/export.js';
import { TransformerLM } from '../nn/transformer.js';
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

const specialTokens = ['<pad>', '<|im_start|>', '<|im_end|>', '<unk>'] as const;

/** Every printable ASCII character and the newline; anything else is <unk>. */
const characters = [
  '\n',
  ...Array.from({ length: 95 }, (_, code) => String.fromCharCode(32 + code)),
];

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
 * The tokenizer: a BPE model with no merges (one token per character, as teamtr's character
 * tokenizer and its export do) plus the chat special tokens, and the ChatML template.
 */
export function chatTokenizer(): HuggingFaceTokenizer {
  const vocabulary: Record<string, number> = {};
  [...specialTokens, ...characters].forEach((token, id) => (vocabulary[token] = id));
  const addedTokens = specialTokens.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: { type: 'Fuse' },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: vocabulary,
      merges: [],
    },
  };
  const config = {
    eos_token: '<|im_end|>',
    pad_token: '<pad>',
    unk_token: '<unk>',
    add_bos_token: false,
    clean_up_tokenization_spaces: false,
    tokenizer_class: 'PreTrainedTokenizerFast',
    model_max_length: 4096,
    chat_template: chatTemplate,
  };
  return new HuggingFaceTokenizer(tokenizerJson, config, 'general chat tokenizer');
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
