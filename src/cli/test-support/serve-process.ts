import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const mainModule = fileURLToPath(new URL('../main.ts', import.meta.url));

export interface ServeProcess {
  /** The groups of `ready`'s match on stdout. */
  match: RegExpExecArray;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `teamtr serve …` (the real CLI, through tsx) in a child process, once its stdout matches
 * `ready` (the line saying where it listens); rejects with its stderr if it exits first.
 */
export async function startServeProcess(argv: string[], ready: RegExp): Promise<ServeProcess> {
  const script =
    `const { main } = await import(${JSON.stringify(pathToFileURL(mainModule).href)});` +
    'process.exitCode = await main(JSON.parse(process.env.TEAMTR_TEST_ARGV));';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, TEAMTR_QUIET_BACKEND: '1', TEAMTR_TEST_ARGV: JSON.stringify(argv) },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
      const found = ready.exec(stdout);
      if (found) resolve(found);
    });
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  }).catch((error: unknown) => {
    child.kill('SIGTERM');
    throw error;
  });
  return {
    match,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
