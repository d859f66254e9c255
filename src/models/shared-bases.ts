import { loadModel, resolveModelSpec, type LoadedModel } from './load.js';
import { applyWeightsDtype, type WeightsDtype } from './weights-dtype.js';

/**
 * One frozen base per checkpoint for a team. Three LoRA agents (solver, critic, finalizer) on
 * the same checkpoint would otherwise hold three identical frozen copies of it: for
 * SmolLM2-135M's shape 3 × 538 MB in float32, 3 × 269 MB in bfloat16. Here the first agent's
 * load reads the checkpoint once into a template, frozen and in its weights dtype, and every
 * agent gets its own module tree over the template's tensors (`Module.cloneSharingWeights`):
 * its own adapters, optimizer and caches, one copy of the weights.
 *
 * The key is what decides the loaded values: the resolved directory and the weights dtype. Only
 * agents whose base stays frozen may share (LoRA or `trainable: false`; build-team.ts decides);
 * an agent that trains its full model loads its own copy. What guards the shared weights:
 * `Module.destroy` frees them with the last holder, `LoraLinear.merge` and `setTrainable(true)`
 * refuse them (naming the agents), and `loadStateDict` accepts only the values they hold.
 *
 * The cache holds no weights of its own: once every agent of a template has been destroyed
 * (a swap took the last one out) its tensors are freed, and the next load reads the checkpoint
 * again. One cache lives with one built team (BuiltTeam.sharedBases), so swaps share with the
 * agents still in the team.
 */
export class SharedBases {
  private readonly templates = new Map<string, LoadedModel>();

  /**
   * `spec`'s model for the agent `agentName`, frozen, with its matrices in `weightsDtype`,
   * sharing its weights with every other agent loaded here from the same checkpoint and dtype.
   * `where` names the setting for errors (agents[name=…].weightsDtype).
   */
  async load(
    spec: string,
    options: { agentName: string; weightsDtype: WeightsDtype | undefined; where: string },
  ): Promise<LoadedModel> {
    const weightsDtype = options.weightsDtype ?? 'float32';
    const key = `${resolveModelSpec(spec)}\u0000${weightsDtype}`;
    let template = this.templates.get(key);
    if (template === undefined || isFreed(template)) {
      template = await loadFrozen(spec, weightsDtype, options.where);
      this.templates.set(key, template);
    }
    return { ...template, model: template.model.cloneSharingWeights(options.agentName) };
  }

  /** How many checkpoints have a live shared base (for tests and diagnostics). */
  get size(): number {
    return [...this.templates.values()].filter((template) => !isFreed(template)).length;
  }
}

/** The checkpoint, frozen, in its weights dtype (bfloat16 converted while loading). */
async function loadFrozen(
  spec: string,
  weightsDtype: WeightsDtype,
  where: string,
): Promise<LoadedModel> {
  const loaded = await loadModel(spec, { frozenMatrices: weightsDtype });
  try {
    // Converts what the format could not convert while loading (teamtr checkpoints; `auto` on a
    // float32 file whose values are bfloat16), and freezes the model.
    applyWeightsDtype(loaded.model, weightsDtype, { trainsFully: false, where });
    loaded.model.setTrainable(false);
  } catch (error) {
    loaded.model.destroy();
    throw error;
  }
  return loaded;
}

function isFreed(template: LoadedModel): boolean {
  return template.model.namedParameters().some(({ tensor }) => tensor.isDisposed);
}
