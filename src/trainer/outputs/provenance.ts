import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { readBoundedFileSync } from '../../util/bounded-file.js';
import { teamtrVersion } from '../../util/package-root.js';
import type { TrainConfig } from '../config/train-config.js';
import type { Provenance } from '../config/tracking.js';

/**
 * The provenance a new run records in config.json: teamtr's version, Node's, the machine
 * (CPU model, cores, memory) and the task's source — its config name, or the module file it
 * was loaded from (path and SHA-256), or code given to `train({ task })`.
 */
export function runProvenance(config: TrainConfig, taskModule: string | undefined): Provenance {
  const cpus = os.cpus();
  return {
    teamtrVersion: teamtrVersion(),
    node: process.version,
    host: {
      platform: os.platform(),
      arch: os.arch(),
      cpu: cpus[0]?.model.trim() ?? 'unknown',
      cores: cpus.length,
      memoryBytes: os.totalmem(),
    },
    task: taskSource(config, taskModule),
  };
}

function taskSource(config: TrainConfig, taskModule: string | undefined): Provenance['task'] {
  const spec = config.task as { name: string; task?: string };
  if (spec.name !== 'code') return { source: 'config', name: spec.name };
  const name = spec.task ?? spec.name;
  if (taskModule === undefined) return { source: 'code', name };
  const file = path.resolve(taskModule);
  const sha256 = createHash('sha256')
    .update(readBoundedFileSync(file, { limit: 'datasetBytes', what: 'a task module' }))
    .digest('hex');
  return { source: 'module', name, path: file, sha256 };
}
