import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The official Tinker Python SDK, ready to run against `teamtr serve --tinker`: its source
 * extracted from the tarball in shared/vendor (never copied into the project), an
 * installed-package record for `importlib.metadata.version("tinker")`, and a Python that can
 * import it. Python packages cannot come from a package index here, so the pieces are found:
 * pydantic 2 and numpy from an interpreter that has them (pyenv's versions, `python3` on PATH),
 * the HTTP, protobuf and torch dependencies from Debian's dist-packages.
 */

export const repositoryRoot = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../..',
);
export const conformanceScript = path.join(repositoryRoot, 'scripts/tinker-sdk-conformance.py');
const sdkVersion = '0.25.0';
const debianPackages = '/usr/lib/python3/dist-packages';

/** shared/ beside the repository (or $TEAMTR_SHARED_DIR); null in a user's clone. */
export function sharedDirectory(): string | null {
  const candidate = process.env.TEAMTR_SHARED_DIR ?? path.join(repositoryRoot, '..', 'shared');
  return existsSync(candidate) ? candidate : null;
}

export interface PythonSdk {
  python: string;
  /** Environment for the conformance script (where the SDK and its dependencies are). */
  environment: Record<string, string>;
  /** What the probe found, e.g. { python: '3.11.7', pydantic: '2.13.4', … }. */
  versions: Record<string, string>;
}

/** Every `python3` worth trying, most specific first: pyenv's versions, then PATH's. */
function candidateInterpreters(): string[] {
  const pyenvRoot = process.env.PYENV_ROOT ?? path.join(os.homedir(), '.pyenv');
  const versions = path.join(pyenvRoot, 'versions');
  const pyenv = existsSync(versions)
    ? readdirSync(versions)
        .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))
        .map((version) => path.join(versions, version, 'bin', 'python3'))
        .filter((file) => existsSync(file))
    : [];
  return [...pyenv, 'python3', '/usr/bin/python3'];
}

/**
 * Layouts of sys.path to try with each interpreter: its own packages then Debian's; and, since
 * Debian's torch is built against Debian's numpy (a pip numpy 2 cannot hand it arrays), the
 * same with Debian's numpy in front.
 */
function pathLayouts(workDirectory: string, sdkPaths: string[]): Array<Record<string, string>> {
  const append = existsSync(debianPackages) ? debianPackages : '';
  const layouts = [
    { TEAMTR_PYTHON_PREPEND: sdkPaths.join(path.delimiter), TEAMTR_PYTHON_APPEND: append },
  ];
  const debianNumpy = path.join(debianPackages, 'numpy');
  if (existsSync(debianNumpy)) {
    const shim = path.join(workDirectory, 'debian-numpy');
    mkdirSync(shim, { recursive: true });
    if (!existsSync(path.join(shim, 'numpy'))) symlinkSync(debianNumpy, path.join(shim, 'numpy'));
    layouts.push({
      TEAMTR_PYTHON_PREPEND: [...sdkPaths, shim].join(path.delimiter),
      TEAMTR_PYTHON_APPEND: append,
    });
  }
  return layouts;
}

/**
 * Extracts the SDK into `workDirectory` and finds an interpreter and path layout that import
 * it; throws listing what each candidate lacked (the test then fails: it never skips here).
 */
export function preparePythonSdk(shared: string, workDirectory: string): PythonSdk {
  const tarball = path.join(shared, 'vendor', `tinker-sdk-${sdkVersion}.tar.gz`);
  if (!existsSync(tarball))
    throw new Error(`${tarball} is missing: shared/vendor should hold the Tinker SDK's source`);
  const sdkRoot = path.join(workDirectory, 'tinker-sdk');
  mkdirSync(sdkRoot, { recursive: true });
  const extracted = spawnSync('tar', ['-xzf', tarball, '-C', sdkRoot], { encoding: 'utf8' });
  if (extracted.status !== 0) throw new Error(`tar -xzf ${tarball}: ${extracted.stderr}`);
  const metadata = path.join(workDirectory, 'metadata');
  mkdirSync(path.join(metadata, `tinker-${sdkVersion}.dist-info`), { recursive: true });
  writeFileSync(
    path.join(metadata, `tinker-${sdkVersion}.dist-info`, 'METADATA'),
    `Metadata-Version: 2.1\nName: tinker\nVersion: ${sdkVersion}\n`,
  );
  const sdkPaths = [path.join(sdkRoot, 'src'), metadata];
  const tried: string[] = [];
  for (const python of candidateInterpreters()) {
    for (const layout of pathLayouts(workDirectory, sdkPaths)) {
      const environment = { ...layout, PYTHONNOUSERSITE: '1', PYTHONDONTWRITEBYTECODE: '1' };
      const probe = spawnSync(python, [conformanceScript, 'probe'], {
        encoding: 'utf8',
        env: { ...process.env, ...environment },
        timeout: 120_000,
      });
      if (probe.status === 0) {
        const versions = JSON.parse(probe.stdout.trim().split('\n').at(-1)!) as Record<
          string,
          string
        >;
        return { python, environment, versions };
      }
      const why = (probe.stderr || probe.error?.message || '').trim().split('\n').at(-1);
      tried.push(
        `${python}${layout.TEAMTR_PYTHON_PREPEND.includes('debian-numpy') ? ' (Debian numpy)' : ''}: ${why}`,
      );
    }
  }
  throw new Error(
    `no Python here can import the Tinker SDK (it needs pydantic 2, numpy, torch, and Debian's python3-httpx python3-anyio python3-protobuf python3-zstandard python3-h2 python3-httpcore python3-sniffio python3-distro python3-torch, which .ci/run installs):\n  ${tried.join('\n  ')}`,
  );
}
