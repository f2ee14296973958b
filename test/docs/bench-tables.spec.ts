import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as report from '../../examples/benchmark-app/src/bench/report.js';
import type { ResultRow } from '../../examples/benchmark-app/src/bench/types.js';
// @ts-expect-error -- a plain ES module script without type declarations
import { expectedBenchDocs, readRun, RESULTS } from '../../scripts/docs-bench.mjs';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe('one current benchmark result', () => {
  const run = readRun() as { rows: ResultRow[]; machine: { cpus: number; cpuModel: string; node: string; os: string } };

  it("the README's and docs/benchmark.md's tables are what results/latest.json gives", async () => {
    // The report module is handed over as Jest loads it; the script transpiles the same file itself.
    const expected = (await expectedBenchDocs({ report, run })) as Record<string, string>;
    for (const [file, text] of Object.entries(expected)) {
      // On a difference: run `pnpm docs:bench` (after a full `pnpm bench`) and commit the result.
      expect({ file, text: read(file) }).toEqual({ file, text });
    }
  });

  it('latest.json, latest.md and latest.svg are one run, written by the benchmark', () => {
    expect(read(`${RESULTS}/latest.json`)).toBe(report.renderJson(run.rows));
    const md = read(`${RESULTS}/latest.md`);
    expect(md).toContain(report.renderMarkdownTable(run.rows));
    expect(md).toContain(report.renderDeliverySection(report.checkDelivery(run.rows)));
    expect(md).toContain('](latest.svg)');
    expect(read(`${RESULTS}/latest.svg`)).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
  });

  it('the committed run is a full one: every route of the tables on both adapters, every item delivered', () => {
    const routes = new Set(run.rows.map((r) => `${r.scenario}|${r.adapter}|${r.variant}`));
    for (const { scenario } of run.rows.filter((r) => r.variant === 'deferred')) {
      for (const adapter of ['express', 'fastify']) {
        for (const variant of ['plain', 'blocking', 'deferred', 'article-tap', 'event-emitter']) {
          if (scenario === 'graphql' && (variant === 'article-tap' || variant === 'event-emitter')) continue;
          expect(routes).toContain(`${scenario}|${adapter}|${variant}`);
        }
      }
    }
    expect(new Set(run.rows.map((r) => r.scenario)).size).toBeGreaterThanOrEqual(14);
    expect(report.checkDelivery(run.rows).filter((c) => !c.pass)).toEqual([]);
  });
});
