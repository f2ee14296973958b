import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../packages/nestjs-deferred-work/src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/**
 * The spool's sources (`src/spool/`, and `src/core/` it imports) compiled to CommonJS in a temp
 * directory, for child processes (`test/fixtures/spool/*.mjs`) that run the real code outside Jest.
 * Returns the path of the compiled `spool/index.js`.
 */
export function buildSpoolForChildren(): string {
  const out = mkdtempSync(join(tmpdir(), 'spool-build-'));
  writeFileSync(join(out, 'package.json'), '{ "type": "commonjs" }\n');
  for (const file of [...sources(join(SRC, 'spool')), ...sources(join(SRC, 'core'))]) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      fileName: file,
    });
    const target = join(out, relative(SRC, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return join(out, 'spool', 'index.js');
}
