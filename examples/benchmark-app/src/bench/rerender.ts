/**
 * Re-renders the delivery section of saved reports from their `latest.json`, keeping the rest of each
 * `latest.md` (how it was run, the table, the chart) as it was. Usage, from examples/benchmark-app
 * after `pnpm run build`: `node dist/bench/rerender.js results/latest.md results/runs/<folder>/latest.md …`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { replaceDeliverySection } from './report.js';
import type { ResultRow } from './types.js';

async function main(files: readonly string[]): Promise<void> {
  if (files.length === 0) throw new Error('Give the latest.md files to re-render, e.g. `node dist/bench/rerender.js results/latest.md`.');
  for (const file of files) {
    const rows = JSON.parse(await readFile(path.join(path.dirname(file), 'latest.json'), 'utf8')) as ResultRow[];
    const before = await readFile(file, 'utf8');
    const after = replaceDeliverySection(before, rows);
    if (after !== before) await writeFile(file, after);
    console.log(`${file}: ${after === before ? 'no delivery section, unchanged' : 'delivery section re-rendered'}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
