import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'nestjs-deferred-work';
/** The worker entry, as the build writes it (ES module). */
const SCRIPT = join('dist', 'worker', 'sink-host.worker.js');

function isThisPackage(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === PACKAGE_NAME;
  } catch {
    return false;
  }
}

let found: string | undefined;

/**
 * The path of the sink host's worker script: `dist/worker/sink-host.worker.js` of this package,
 * found by walking up from this module to the package's root (the same from the built `dist/` and,
 * in this repository's tests, from the TypeScript sources — which then need a build first).
 */
export function sinkHostScript(): string {
  if (found) return found;
  // __dirname in the CommonJS build (tsup's import.meta.url shim breaks on a '#' in the path)
  let dir = typeof __dirname === 'string' ? __dirname : dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (isThisPackage(dir)) {
      const script = join(dir, SCRIPT);
      if (!existsSync(script)) {
        throw new Error(`${PACKAGE_NAME}: the sink host's worker script ${script} is missing. Build the package (pnpm build) or reinstall it.`);
      }
      found = script;
      return script;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${PACKAGE_NAME}: cannot find the package root above ${fileURLToPath(import.meta.url)}; reinstall the package.`);
    dir = parent;
  }
}
