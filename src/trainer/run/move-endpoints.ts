import { ConfigError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { trainConfigSchema } from '../config/train-config.js';
import type { HeldRun } from './run-directory.js';

/**
 * Points remote agents of an existing run at new server addresses (agent name → baseURL), e.g.
 * after the server restarted on another port. Only `endpoint.baseURL` changes; config.json is
 * rewritten atomically and recorded in the checkpoint's integrity record, so later `--resume`, eval, serve and export use the new address. The
 * run's results do not depend on the address as long as the same model answers there.
 */
export async function moveRemoteEndpoints(
  run: HeldRun,
  moves: Readonly<Record<string, string>>,
): Promise<void> {
  const raw = (await run.readConfig()) as { agents?: Array<Record<string, unknown>> };
  const agents = Array.isArray(raw.agents) ? raw.agents : [];
  const names = agents.map((agent) => String(agent.name));
  for (const [name, baseURL] of Object.entries(moves)) {
    const agent = agents.find((candidate) => candidate.name === name);
    if (!agent)
      throw new ConfigError(
        'endpoint',
        `the run has no agent "${name}" (agents: ${names.join(', ')})`,
      );
    const endpoint = agent.endpoint;
    if (typeof endpoint !== 'object' || endpoint === null)
      throw new ConfigError(
        'endpoint',
        `agent "${name}" is not a remote agent (it has a local model); only remote agents have an address to move`,
      );
    agent.endpoint = { ...endpoint, baseURL };
  }
  // Refuse a malformed address before anything is written.
  parseWithSchema(trainConfigSchema, raw, 'endpoint');
  await run.writeConfig(raw);
}
