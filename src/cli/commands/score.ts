import type { Command } from 'commander';
import { loadModel } from '../../models/load.js';
import { scoreToArrays } from '../../nn/score.js';
import { TeamtrError } from '../../util/errors.js';

function parseIds(text: string): number[] {
  const parts = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
  const ids = parts.map(Number);
  const bad = parts.find((_part, index) => !Number.isInteger(ids[index]) || ids[index]! < 0);
  if (bad !== undefined || ids.length === 0)
    throw new TeamtrError(
      `--ids must be comma-separated token ids (integers ≥ 0), got ${JSON.stringify(text)}${bad !== undefined ? ` (bad: ${JSON.stringify(bad)})` : ''}`,
    );
  return ids;
}

export function register(program: Command): void {
  program
    .command('score')
    .description("each token's log-probability given the tokens before it, for any model directory")
    .requiredOption(
      '--model <dir>',
      'the model directory (teamtr checkpoint, Hugging Face directory or builtin:<task>/<role>)',
    )
    .option('--text <text>', 'text to tokenize (BOS first when the tokenizer adds one)')
    .option('--ids <ids>', 'comma-separated token ids, scored as given')
    .option(
      '--json',
      'print one JSON object on stdout: ids, tokens, logProbs (null for the first token)',
    )
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      if ((flags.text === undefined) === (flags.ids === undefined))
        throw new TeamtrError('give exactly one of --text and --ids');
      const { model, tokenizer, source } = await loadModel(String(flags.model));
      const ids =
        flags.ids !== undefined
          ? parseIds(String(flags.ids))
          : [
              ...(tokenizer.bosId !== undefined ? [tokenizer.bosId] : []),
              ...tokenizer.encode(String(flags.text)),
            ];
      if (ids.length === 0) throw new TeamtrError('--text encodes to no tokens');
      const vocab = Math.min(model.config.vocabSize, tokenizer.vocabSize);
      const outside = ids.find((id) => id >= vocab);
      if (outside !== undefined)
        throw new TeamtrError(`token id ${outside} is outside the vocabulary (0 to ${vocab - 1})`);
      if (ids.length > model.config.maxPositions)
        throw new TeamtrError(
          `${ids.length} tokens exceed the model's context of ${model.config.maxPositions}`,
        );
      const scored =
        ids.length > 1
          ? scoreToArrays(model, [{ context: ids.slice(0, 1), completion: ids.slice(1) }])[0]!
              .logProbs
          : new Float32Array(0);
      const logProbs: Array<number | null> = [null, ...Array.from(scored)];
      const total = scored.reduce((sum, value) => sum + value, 0);
      const tokens = ids.map((id) => tokenizer.idToToken(id) ?? null);
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ model: source, ids, tokens, logProbs, totalLogProb: total, scoredTokens: scored.length })}\n`,
        );
        return;
      }
      ids.forEach((id, index) => {
        const value = logProbs[index];
        process.stdout.write(
          `${String(id).padStart(7)}  ${(value === null ? '—' : value!.toFixed(4)).padStart(9)}  ${JSON.stringify(tokens[index])}\n`,
        );
      });
      const perplexity = scored.length > 0 ? Math.exp(-total / scored.length) : Number.NaN;
      process.stdout.write(
        `total log-prob ${total.toFixed(4)} over ${scored.length} tokens (perplexity ${perplexity.toFixed(3)})\n`,
      );
    });
}
