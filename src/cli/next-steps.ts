import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { packagePath } from './package-path.js';

/** How this process was started, as far as choosing a command the user can paste goes. */
export interface Invocation {
  /** process.argv[1]: the script node ran (a bin shim, or bin/teamtr.js itself). */
  script: string;
  /** The directory the user typed the command in (npm sets INIT_CWD; else the cwd). */
  userDirectory: string;
  /** npm's `npm_command` when npm started us (`exec` for npx, `run-script` for npm run). */
  npmCommand: string | undefined;
  /** Where `teamtr` on the user's PATH leads (resolved), or null when it is not there. */
  teamtrOnPath: string | null;
  /** This package's bin/teamtr.js, resolved. */
  ownBin: string;
}

/**
 * The command that runs teamtr where the user is: `teamtr` when it is on their PATH (a global
 * install), `npx teamtr` in a project that has it (an app, or this repository: npm run demo),
 * else `node <path to bin/teamtr.js>`, as they ran it.
 */
export function teamtrCommand(invocation: Invocation): string {
  if (invocation.npmCommand !== undefined) return 'npx teamtr';
  if (invocation.teamtrOnPath !== null && invocation.teamtrOnPath === invocation.ownBin)
    return 'teamtr';
  const script = path.relative(invocation.userDirectory, invocation.script) || invocation.script;
  return `node ${shellWord(script.startsWith('..') ? invocation.script : script)}`;
}

/** A word the shell passes through unchanged (quoted when it holds anything special). */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function resolved(file: string): string | null {
  try {
    return statSync(file).isFile() ? realpathSync(file) : null;
  } catch {
    return null;
  }
}

/** `teamtr` on PATH as the user's shell finds it (npm puts node_modules/.bin first for itself). */
function teamtrOnPath(environment: NodeJS.ProcessEnv): string | null {
  for (const directory of (environment.PATH ?? '').split(path.delimiter)) {
    if (!directory || directory.split(path.sep).includes('node_modules')) continue;
    const found = resolved(path.join(directory, 'teamtr'));
    if (found) return found;
  }
  return null;
}

/** This process's invocation. */
export function currentInvocation(environment: NodeJS.ProcessEnv = process.env): Invocation {
  return {
    script: path.resolve(process.argv[1] ?? packagePath('bin', 'teamtr.js')),
    userDirectory: environment.INIT_CWD ?? process.cwd(),
    npmCommand: environment.npm_command,
    teamtrOnPath: teamtrOnPath(environment),
    ownBin: resolved(packagePath('bin', 'teamtr.js')) ?? packagePath('bin', 'teamtr.js'),
  };
}

/**
 * The lines that close a run's summary: commands to look at, evaluate and serve the run,
 * runnable as printed from the directory the user started in.
 */
export function nextSteps(
  runDirectory: string,
  invocation: Invocation = currentInvocation(),
): string {
  const command = teamtrCommand(invocation);
  const relative = path.relative(invocation.userDirectory, path.resolve(runDirectory));
  const run = shellWord(
    relative && !relative.startsWith('..') ? relative : path.resolve(runDirectory),
  );
  const steps: Array<[string, string]> = [
    [`${command} dashboard ${run}`, 'its curves, live in the browser'],
    [`${command} report ${run}`, 'the same figures as one HTML file'],
    [`${command} eval ${run}`, 'team accuracy with 95% intervals'],
    [`${command} serve ${run}`, 'the trained team behind an OpenAI-compatible API'],
  ];
  const width = Math.max(...steps.map(([line]) => line.length));
  return [
    '',
    'Next steps:',
    ...steps.map(([line, what]) => `  ${line.padEnd(width)}  # ${what}`),
    '',
  ].join('\n');
}
