import type { Command } from 'commander';
import { chatPromptIds, type ChatMessage } from '../../models/chat.js';
import { loadModel, type LoadedModel } from '../../models/load.js';
import { applyWeightsDtype, parseWeightsDtype } from '../../models/weights-dtype.js';
import { generateText, type GenerationSettings } from '../../serve/generation.js';
import { TeamtrError } from '../../util/errors.js';
import { RandomGenerator } from '../../util/random.js';

function numberFlag(
  flag: string,
  value: unknown,
  check: (parsed: number) => boolean,
  expected: string,
): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || !check(parsed))
    throw new TeamtrError(`--${flag} must be ${expected}, got ${JSON.stringify(value)}`);
  return parsed;
}

/** Flags over the model's generation_config.json defaults over plain sampling. */
function settingsFrom(flags: Record<string, unknown>, loaded: LoadedModel): GenerationSettings {
  const { tokenizer, generation } = loaded;
  const temperature = numberFlag(
    'temperature',
    flags.temperature,
    (value) => value >= 0,
    'a number ≥ 0',
  );
  const topP = numberFlag('top-p', flags.topP, (value) => value > 0 && value <= 1, 'in (0, 1]');
  const topK = numberFlag(
    'top-k',
    flags.topK,
    (value) => Number.isInteger(value) && value >= 0,
    'an integer ≥ 0',
  );
  return {
    maxNewTokens: numberFlag(
      'max-tokens',
      flags.maxTokens,
      (value) => Number.isInteger(value) && value > 0,
      'a positive integer',
    )!,
    temperature: temperature ?? generation?.temperature ?? 1,
    topP: topP ?? generation?.topP ?? 1,
    topK: topK ?? generation?.topK ?? 0,
    stopTokenIds: [
      ...new Set([
        ...(tokenizer.eosId !== undefined ? [tokenizer.eosId] : []),
        ...(generation?.stopTokenIds ?? []),
      ]),
    ],
    stopStrings: (flags.stop as string[] | undefined) ?? [],
    random: new RandomGenerator(
      numberFlag('seed', flags.seed, Number.isSafeInteger, 'an integer')!,
    ),
    topLogprobs: 0,
  };
}

function promptIdsFrom(flags: Record<string, unknown>, loaded: LoadedModel): number[] {
  const { tokenizer } = loaded;
  const prompt = String(flags.prompt);
  if (!flags.chat)
    return [
      ...(tokenizer.bosId !== undefined ? [tokenizer.bosId] : []),
      ...tokenizer.encode(prompt),
    ];
  const messages: ChatMessage[] = [
    ...(flags.system !== undefined ? [{ role: 'system', content: String(flags.system) }] : []),
    { role: 'user', content: prompt },
  ];
  return chatPromptIds(tokenizer, messages);
}

export function register(program: Command): void {
  program
    .command('sample')
    .description(
      'sample a continuation from any model directory (teamtr checkpoint, Hugging Face directory or builtin:<task>/<role>)',
    )
    .requiredOption('--model <dir>', 'the model directory')
    .requiredOption('--prompt <text>', 'the prompt (with --chat: the user message)')
    .option('--chat', "wrap the prompt in the model's chat template (plain text without one)")
    .option('--system <text>', 'a system message (with --chat)')
    .option('--max-tokens <n>', 'tokens to generate', '64')
    .option('--temperature <t>', "0 = greedy (default: the model's generation_config.json, else 1)")
    .option('--top-p <p>', "nucleus sampling (default: the model's, else 1)")
    .option('--top-k <k>', "top-k sampling, 0 = off (default: the model's, else 0)")
    .option('--stop <text...>', 'stop strings')
    .option('--seed <n>', 'sampling seed', '0')
    .option('--json', 'print one JSON object on stdout')
    .option(
      '--weights-dtype <dtype>',
      'bfloat16: weight matrices in half the bytes (decoding about twice as fast, each weight rounded to 8 significant bits); float32; or auto: bfloat16 when the weights are bfloat16 values already (a BF16 checkpoint), so nothing is rounded',
      'auto',
    )
    .action(async (flags: Record<string, unknown>) => {
      if (flags.system !== undefined && !flags.chat) throw new TeamtrError('--system needs --chat');
      const weightsDtype = parseWeightsDtype(flags.weightsDtype);
      const loaded = await loadModel(String(flags.model));
      applyWeightsDtype(loaded.model, weightsDtype, {
        trainsFully: false,
        where: '--weights-dtype',
      });
      const settings = settingsFrom(flags, loaded);
      const promptIds = promptIdsFrom(flags, loaded);
      const stream = !flags.json;
      const onDelta = stream ? (text: string) => process.stdout.write(text) : undefined;
      const result = await generateText(loaded.model, loaded.tokenizer, promptIds, settings, {
        onDelta,
      });
      if (stream) {
        process.stdout.write('\n');
        process.stderr.write(`[${result.tokens.length} tokens, finish: ${result.finishReason}]\n`);
        return;
      }
      const logProbs = result.logprobs.map((entry) => entry.logprob);
      process.stdout.write(
        `${JSON.stringify({ model: loaded.source, promptIds, text: result.text, tokens: result.tokens, logProbs, finishReason: result.finishReason })}\n`,
      );
    });
}
