import path from 'node:path';
import type { Command } from 'commander';
import { loadModel } from '../../models/load.js';
import { applyWeightsDtype, parseWeightsDtype } from '../../models/weights-dtype.js';
import { modelEndpoint, type ServedModel } from '../../serve/endpoints.js';
import { teamEndpoints } from '../../serve/run-endpoints.js';
import { startServer } from '../../serve/server.js';
import { LocalTinkerEngine } from '../../serve/tinker/local-engine.js';
import { startTinkerService } from '../../serve/tinker/server.js';
import { openRun } from '../../trainer/open-run.js';
import { TeamtrError } from '../../util/errors.js';
import { untilInterrupted } from '../interrupted.js';
import { loadTaskModule } from '../task-module.js';

function integerFlag(flag: string, value: unknown, minimum: number): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < minimum)
    throw new TeamtrError(
      `--${flag} must be an integer ≥ ${minimum}, got ${JSON.stringify(value)}`,
    );
  return parsed;
}

/** A run's agents (those with a local model) and the whole team; or one model directory. */
async function endpointsFor(
  runDirectory: string | undefined,
  flags: Record<string, unknown>,
): Promise<ServedModel[]> {
  if ((runDirectory === undefined) === (flags.model === undefined))
    throw new TeamtrError('give a run directory or --model <dir> (one of them)');
  const promptFormat = flags.promptFormat as 'chat-template' | 'plain' | undefined;
  if (promptFormat !== undefined && !['chat-template', 'plain'].includes(promptFormat)) {
    throw new TeamtrError(
      `--prompt-format must be chat-template or plain, got ${JSON.stringify(promptFormat)}`,
    );
  }
  const weightsDtype = parseWeightsDtype(flags.weightsDtype);
  // Serving trains nothing, so every model's matrices may be kept in bfloat16.
  const serving = { trainsFully: false, where: '--weights-dtype' };
  if (flags.model !== undefined) {
    const loaded = await loadModel(String(flags.model));
    applyWeightsDtype(loaded.model, weightsDtype, serving);
    const id =
      (flags.name as string | undefined) ?? path.basename(path.resolve(String(flags.model)));
    return [
      modelEndpoint({
        id,
        model: loaded.model,
        tokenizer: loaded.tokenizer,
        generation: loaded.generation,
        promptFormat,
      }),
    ];
  }
  const { built, run, config } = await openRun(runDirectory!, {
    task: flags.taskModule ? await loadTaskModule(String(flags.taskModule)) : undefined,
  });
  for (const agent of built.team.agents)
    if (agent.policy.model) applyWeightsDtype(agent.policy.model, weightsDtype, serving);
  if (!run.hasCheckpoint())
    process.stderr.write(
      `teamtr serve: warning: ${runDirectory} has no checkpoint yet, so its agents are the untrained base models\n`,
    );
  // Each agent answers in the prompt format it was trained with, at the run's temperature.
  return teamEndpoints(built.team, {
    teamId: (flags.name as string | undefined) ?? 'team',
    temperature: config.rollout.temperature,
    ...(promptFormat ? { promptFormat } : {}),
  });
}

/**
 * `--tinker`: the Tinker training API on the local engine, one LoRA model per model id on the
 * --model checkpoint (clients pass its --name, or directory name, as base_model).
 */
async function serveTinker(runDirectory: string | undefined, flags: Record<string, unknown>) {
  if (runDirectory !== undefined || flags.model === undefined)
    throw new TeamtrError(
      '--tinker serves a base model for training: give --model <dir> (a checkpoint directory or a built-in model name), not a run directory',
    );
  const source = String(flags.model);
  await loadModel(source); // fail now, with the loader's message, rather than at create_model
  const name = (flags.name as string | undefined) ?? path.basename(path.resolve(source));
  const host = String(flags.host);
  const service = await startTinkerService({
    engine: new LocalTinkerEngine(name, source, {
      stateDirectory: flags.stateDir === undefined ? undefined : String(flags.stateDir),
      weightsDtype: parseWeightsDtype(flags.weightsDtype),
      maxSavedBytes: integerFlag('max-saved-bytes', flags.maxSavedBytes, 1),
    }),
    host,
    port: integerFlag('port', flags.port, 0),
    maxBodyBytes:
      flags.maxBodyBytes === undefined
        ? 64 * 1024 * 1024
        : integerFlag('max-body-bytes', flags.maxBodyBytes, 1),
    log: flags.quiet ? undefined : (line) => process.stderr.write(`teamtr serve: ${line}\n`),
  });
  if (!['127.0.0.1', 'localhost', '::1'].includes(host))
    process.stderr.write(
      `teamtr serve: warning: bound to ${host}; anyone who can reach it can train on this machine (API keys are not checked)\n`,
    );
  const interrupted = untilInterrupted();
  process.stdout.write(
    `teamtr serve: Tinker API on ${service.url} (base_model: ${name}); point a client at baseURL ${service.url}\n`,
  );
  await interrupted;
  await service.close();
}

/** The OpenAI-compatible API over a run's agents and team, or over one model directory. */
async function serveOpenAiApi(runDirectory: string | undefined, flags: Record<string, unknown>) {
  if (flags.stateDir !== undefined)
    throw new TeamtrError(
      "--state-dir goes with --tinker (it keeps the Tinker API's saved weights)",
    );
  const endpoints = await endpointsFor(runDirectory, flags);
  const host = String(flags.host);
  const server = await startServer({
    endpoints,
    host,
    port: integerFlag('port', flags.port, 0),
    maxBodyBytes:
      flags.maxBodyBytes === undefined
        ? 1024 * 1024
        : integerFlag('max-body-bytes', flags.maxBodyBytes, 1),
    maxConcurrent: integerFlag('max-concurrent', flags.maxConcurrent, 1),
    maxQueued: integerFlag('max-queued', flags.maxQueued, 0),
    corsOrigin: flags.cors as string | undefined,
  });
  if (!['127.0.0.1', 'localhost', '::1'].includes(host))
    process.stderr.write(
      `teamtr serve: warning: bound to ${host}; anyone who can reach it can use the models (there is no authentication)\n`,
    );
  const interrupted = untilInterrupted();
  process.stdout.write(
    `teamtr serve: listening on ${server.url}/v1 (models: ${endpoints.map((endpoint) => endpoint.id).join(', ')})\n`,
  );
  await interrupted;
  await server.close();
}

export function register(program: Command): void {
  const command = program
    .command('serve')
    .description(
      "serve a run's trained agents and the whole team (or one model directory) over an OpenAI-compatible HTTP API",
    )
    .argument('[run-dir]', 'a run directory written by `teamtr train`');
  declareSourceOptions(command);
  declareServerOptions(command);
  declareTinkerOptions(command);
  command
    .option(
      '--weights-dtype <dtype>',
      'bfloat16: weight matrices in half the bytes (decoding about twice as fast, each weight rounded to 8 significant bits); float32; or auto: bfloat16 when the weights are bfloat16 values already (a BF16 checkpoint), so nothing is rounded',
      'auto',
    )
    .action(async (runDirectory: string | undefined, flags: Record<string, unknown>) => {
      if (flags.tinker) return serveTinker(runDirectory, flags);
      return serveOpenAiApi(runDirectory, flags);
    });
}

/** What to serve: a run (and its task module) or a model directory, and its id. */
function declareSourceOptions(command: Command): void {
  command
    .option(
      '--task-module <file>',
      "the run's task, when it was defined in code (the module given to `teamtr train --task-module`)",
    )
    .option('--model <dir>', 'serve this model directory instead of a run')
    .option(
      '--name <id>',
      'model id of --model (default: the directory name), or of the team (default: team)',
    );
}

/** Where the server listens and how much it takes on. */
function declareServerOptions(command: Command): void {
  command
    .option(
      '--host <host>',
      'address to bind (anything but loopback exposes the models to the network)',
      '127.0.0.1',
    )
    .option('--port <n>', 'port (0 = any free port)', '8000')
    .option(
      '--prompt-format <format>',
      "chat messages → prompt: chat-template or plain (default: the chat template when the model's tokenizer has one, as a run's agents were trained)",
    )
    .option(
      '--max-body-bytes <n>',
      'largest accepted request body (default: 1 MiB; with --tinker 64 MiB, as forward_backward batches are large)',
    )
    .option('--max-concurrent <n>', 'completions generated at once', '1')
    .option('--max-queued <n>', 'completions waiting for a slot before 429', '8')
    .option(
      '--cors <origin>',
      'let web pages from this origin call the server (e.g. http://localhost:3000, or *); off by default',
    );
}

/** The Tinker training API instead of the OpenAI-compatible one. */
function declareTinkerOptions(command: Command): void {
  command
    .option(
      '--tinker',
      'serve the Tinker training API (create_model, forward_backward, optim_step, asample, …) on --model instead of the OpenAI-compatible API',
    )
    .option(
      '--state-dir <dir>',
      'with --tinker: keep saved weights (save_weights) in this directory, so a restarted server still loads them (resume of a run trained on it)',
    )
    .option(
      '--max-saved-bytes <n>',
      'with --tinker: all saved weights together (save_weights, save_weights_for_sampler) may hold at most this many bytes; a save past it is refused',
      String(4 * 1024 ** 3),
    )
    .option('--quiet', 'with --tinker: no request log on stderr');
}
