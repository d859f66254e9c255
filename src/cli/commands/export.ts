import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { readSafetensorsHeader } from '../../io/safetensors.js';
import { exportHuggingFaceModel } from '../../models/huggingface/export.js';
import { loadModel, type LoadedModel } from '../../models/load.js';
import { loadPeftAdapter } from '../../models/peft.js';
import { openRun } from '../../trainer/open-run.js';
import { TeamtrError } from '../../util/errors.js';
import { loadTaskModule } from '../task-module.js';

/** The model to export: a run's agent (its latest weights) or a directory, plus an adapter. */
async function source(
  runDirectory: string | undefined,
  flags: Record<string, unknown>,
): Promise<LoadedModel> {
  if ((runDirectory === undefined) === (flags.model === undefined))
    throw new TeamtrError('give a run directory (with --agent) or --model <dir>');
  if (flags.model !== undefined) {
    const loaded = await loadModel(String(flags.model));
    if (flags.adapter !== undefined)
      await loadPeftAdapter(loaded.model, path.resolve(String(flags.adapter)));
    return loaded;
  }
  if (flags.adapter !== undefined)
    throw new TeamtrError("--adapter goes with --model; a run's agents carry their own adapters");
  const { built } = await openRun(runDirectory!, {
    task: flags.taskModule ? await loadTaskModule(String(flags.taskModule)) : undefined,
  });
  const names = built.team.agents.map((agent) => agent.name);
  const index =
    flags.agent === undefined && names.length === 1 ? 0 : names.indexOf(String(flags.agent));
  if (index < 0)
    throw new TeamtrError(
      `${flags.agent === undefined ? 'give --agent' : `no agent "${flags.agent}"`} (agents: ${names.join(', ')})`,
    );
  const agent = built.team.agents[index]!;
  if (!agent.policy.model)
    throw new TeamtrError(
      `agent "${agent.name}" is a remote model; there are no local weights to export`,
    );
  const origin = built.models.find((model) => model.model === agent.policy.model);
  return {
    ...(origin ?? { source: runDirectory!, optimizerState: null, extra: null }),
    model: agent.policy.model,
    tokenizer: agent.policy.tokenizer,
  };
}

/**
 * Parameters in the weight files written: what a reader of the directory loads. The model's
 * own count would add LoRA adapters (merged into the weights here) and count tied weights once
 * however the file stores them.
 */
export async function parametersInFiles(directory: string): Promise<number> {
  let count = 0;
  for (const file of readdirSync(directory).filter((name) => name.endsWith('.safetensors'))) {
    const header = await readSafetensorsHeader(path.join(directory, file));
    for (const entry of header.tensors.values())
      count += entry.shape.reduce((product, size) => product * size, 1);
  }
  return count;
}

export function register(program: Command): void {
  program
    .command('export')
    .description(
      'write a model as a Hugging Face directory (config.json, model.safetensors, tokenizer files), LoRA adapters merged',
    )
    .argument('[run-dir]', 'a run directory written by `teamtr train`')
    .option('--agent <name>', 'which agent of the run')
    .option('--task-module <file>', "the run's task, when it was defined in code")
    .option('--model <dir>', 'export this model directory instead of a run agent')
    .option('--adapter <dir>', 'a PEFT adapter directory to merge into --model')
    .requiredOption('--out <dir>', 'the output directory (replaced atomically)')
    .option('--shard-size-mb <n>', 'largest safetensors shard', '2048')
    .option('--json', 'print one JSON object on stdout')
    .action(async (runDirectory: string | undefined, flags: Record<string, unknown>) => {
      const out = path.resolve(String(flags.out));
      if (
        existsSync(out) &&
        readdirSync(out).length > 0 &&
        !existsSync(path.join(out, 'config.json'))
      ) {
        throw new TeamtrError(
          `${out} is a non-empty directory that is not a model directory; refusing to replace it (choose another --out)`,
        );
      }
      const shardMegabytes = Number(flags.shardSizeMb);
      if (!(shardMegabytes > 0))
        throw new TeamtrError(
          `--shard-size-mb must be positive, got ${JSON.stringify(flags.shardSizeMb)}`,
        );
      const loaded = await source(runDirectory, flags);
      await exportHuggingFaceModel(loaded.model, loaded.tokenizer, out, {
        huggingFaceConfig: loaded.huggingFaceConfig,
        generation: loaded.generation,
        maxShardBytes: shardMegabytes * 1024 * 1024,
      });
      const files = readdirSync(out).sort();
      const parameters = await parametersInFiles(out);
      if (flags.json) process.stdout.write(`${JSON.stringify({ out, files, parameters })}\n`);
      else
        process.stdout.write(
          `Exported ${parameters.toLocaleString('en-US')} parameters to ${out} (${files.join(', ')})\n`,
        );
    });
}
