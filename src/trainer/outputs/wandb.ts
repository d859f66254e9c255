import { TeamtrError } from '../../util/errors.js';

/**
 * Weights & Biases, live, through its TypeScript SDK (`@wandb/sdk`, an optional peer
 * dependency: teamtr runs without it). That SDK has no offline store — its `offline` setting
 * drops what is logged, and starting a run always asks the W&B server — so W&B's offline mode
 * is the run's TensorBoard event file, which W&B's own command line imports later
 * (`wandb sync RUN_DIR`). Only `tracking.wandb.mode: online` loads the SDK.
 */

/** The part of the SDK's run teamtr uses. */
export interface WandbRun {
  log(data: Record<string, number>, step?: number): void;
  finish(code?: number): Promise<void>;
}

/** The part of the SDK teamtr uses (its default export). */
export interface WandbSdk {
  init(options: {
    project: string;
    entity?: string;
    name?: string;
    config?: unknown;
    resume?: boolean | string;
    id?: string;
  }): Promise<WandbRun>;
}

export interface WandbSettings {
  project: string;
  entity?: string;
}

/** How the SDK is found (a test passes its own). */
export type ModuleImporter = (specifier: string) => Promise<unknown>;

const sdkName = '@wandb/sdk';

/**
 * A live W&B run for `settings`, named after the run directory (resumed under the same id).
 * Fails with what to install or set when the SDK is missing or cannot start.
 */
export async function startWandbRun(
  settings: WandbSettings,
  run: { id: string; name: string; config: unknown },
  importModule: ModuleImporter = (specifier) => import(specifier),
): Promise<WandbRun> {
  let sdk: WandbSdk;
  try {
    const module = (await importModule(sdkName)) as { default?: WandbSdk };
    sdk = module.default ?? (module as unknown as WandbSdk);
  } catch {
    throw new TeamtrError(
      `tracking.wandb.mode is "online" but ${sdkName} is not installed; install it beside teamtr (npm install ${sdkName} graphql), or drop tracking.wandb.mode to keep W&B offline (the run's TensorBoard event file, uploaded later with \`wandb sync RUN_DIR\`)`,
    );
  }
  // The SDK listens for SIGINT and exits the process; teamtr's own Ctrl-C (finish the stage,
  // save, summarize) must keep working, and the run is finished below instead.
  const listening = new Set(process.listeners('SIGINT'));
  try {
    return await sdk.init({
      project: settings.project,
      ...(settings.entity !== undefined ? { entity: settings.entity } : {}),
      id: run.id,
      name: run.name,
      resume: 'allow',
      config: run.config,
    });
  } catch (error) {
    throw new TeamtrError(
      `W&B could not start a run (${(error as Error).message}); set WANDB_API_KEY (and WANDB_BASE_URL for a server of your own), check the network, or drop tracking.wandb.mode to keep W&B offline`,
    );
  } finally {
    for (const listener of process.listeners('SIGINT'))
      if (!listening.has(listener)) process.off('SIGINT', listener);
  }
}
