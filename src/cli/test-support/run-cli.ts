import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const mainModule = fileURLToPath(new URL('../main.ts', import.meta.url));
/** tsx from this repository, so the child may run in any directory. */
const tsx = import.meta.resolve('tsx');

/**
 * The real CLI entry in a child process (through tsx, so no build is needed), with its exit
 * code and output. A child keeps the test runner's stdout free for its own reporting.
 */
export function runCli(
  argv: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const script =
    `const { main } = await import(${JSON.stringify(pathToFileURL(mainModule).href)});` +
    `process.exitCode = await main(JSON.parse(process.env.TEAMTR_TEST_ARGV));`;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', tsx, '--input-type=module', '-e', script],
      {
        cwd: options.cwd,
        env: {
          ...process.env,
          ...options.env,
          TEAMTR_TEST_ARGV: JSON.stringify(argv),
          TEAMTR_QUIET_BACKEND: '1',
        },
      },
      (error, stdout, stderr) => {
        const code = error && typeof error.code === 'number' ? error.code : error ? 1 : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
