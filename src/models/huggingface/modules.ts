import type { ModelConfig } from '../../nn/config.js';
import { weightLayout } from './weight-rules.js';

/**
 * The linear layers of a model under both naming schemes: the Hugging Face module path
 * (`model.layers.0.self_attn.q_proj`) and the engine's module path(s)
 * (`blocks.0.attention.queryProjection`); GPT-2's fused `c_attn` is three engine modules.
 * Derived from the weight rules, so LoRA adapters and weights can never disagree on names.
 */
export interface LinearModuleMapping {
  hfModule: string;
  /** Engine modules in the order their outputs are stacked in the Hugging Face layer. */
  ourModules: string[];
  /** The module path within a layer (`self_attn.q_proj`, `attn.c_attn`), or the path itself. */
  typeName: string;
}

const linearModule = /(Projection|outputHead)$/;

export function linearModuleMappings(config: ModelConfig): LinearModuleMapping[] {
  return weightLayout(config).rules.flatMap((rule) => {
    if (
      !rule.source.endsWith('.weight') ||
      !rule.targets.every((target) => target.endsWith('.weight'))
    )
      return [];
    const ourModules = rule.targets.map((target) => target.slice(0, -'.weight'.length));
    if (!ourModules.every((module) => linearModule.test(module))) return [];
    const hfModule = rule.source.slice(0, -'.weight'.length);
    return [
      {
        hfModule,
        ourModules,
        typeName: hfModule.replace(/^(model\.layers|transformer\.h|h)\.\d+\./, ''),
      },
    ];
  });
}

/**
 * The short name PEFT's `target_modules` matches by suffix: the last path component when it is
 * unambiguous in this architecture (`q_proj`), else the in-layer path (`attn.c_proj` vs
 * `mlp.c_proj` in GPT-2).
 */
export function targetModuleName(
  mapping: LinearModuleMapping,
  all: readonly LinearModuleMapping[],
): string {
  const last = mapping.typeName.split('.').at(-1)!;
  const sharing = new Set(
    all.filter((other) => other.typeName.split('.').at(-1) === last).map((other) => other.typeName),
  );
  return sharing.size > 1 ? mapping.typeName : last;
}

/** Engine module names (the last component, e.g. `queryProjection`) that a PEFT-style name selects. */
export function engineNamesFor(name: string, all: readonly LinearModuleMapping[]): string[] {
  const matches = all.filter(
    (mapping) =>
      mapping.typeName === name ||
      mapping.typeName.endsWith(`.${name}`) ||
      mapping.hfModule === name,
  );
  return [
    ...new Set(
      matches.flatMap((mapping) => mapping.ourModules.map((module) => module.split('.').at(-1)!)),
    ),
  ];
}
