import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anchorsOf, brokenLinks, datesIn, datesInText, root, slug, userPages } from './markdown-pages';

describe('user pages (README.md and docs/)', () => {
  it('say what is true now: no date in a heading or paragraph (code samples, link addresses and API version paths aside)', () => {
    // A dated measurement belongs in examples/benchmark-app/results/runs/<run>/README.md, a change in CHANGELOG.md.
    expect(userPages().flatMap(datesIn)).toEqual([]);
  });

  it('have no broken relative link: every file exists and every #anchor is a heading (or an <a id>) of its page', () => {
    expect(userPages().flatMap(brokenLinks)).toEqual([]);
  });

  it('give no host load average in the pages that quote measurements', () => {
    const pages = ['docs/benchmark.md', 'docs/request-path.md'];
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = readme.slice(readme.indexOf('<!-- bench-table:start -->'), readme.indexOf('<!-- bench-table:end -->'));
    const texts = [...pages.map((p) => [p, readFileSync(join(root, p), 'utf8')]), ['README.md (benchmark block)', block]];
    expect(texts.filter(([, text]) => /load average/i.test(text)).map(([page]) => page)).toEqual([]);
  });
});

describe('the checks themselves', () => {
  it("compute GitHub's anchors", () => {
    expect(slug('CPU profiles of the request thread (`--mode perf`)')).toBe('cpu-profiles-of-the-request-thread---mode-perf');
    expect(slug("deferred-offload and the worker's CPU")).toBe('deferred-offload-and-the-workers-cpu');
    expect(slug('Packing jobs (`packJobs`)')).toBe('packing-jobs-packjobs');
    expect(slug('Handles — and the [async context](x.md)')).toBe('handles--and-the-async-context');
    expect(slug('`A redrive is running (started <time>, <n> of <m> handed back)`')).toBe('a-redrive-is-running-started-time-n-of-m-handed-back');
    expect(slug('Kafka <a id="x"></a>keys')).toBe('kafka-keys');
    expect(anchorsOf(join(root, 'docs/benchmark.md'))).toContain('how-to-read-a-ratio');
  });

  it('find dates in prose, not in code, link addresses, version paths or HTML', () => {
    const dated = (text: string) => datesInText(text, 'page').length > 0;
    expect(dated('## A full run (2026-11-26, evening)')).toBe(true);
    expect(dated('| a row | measured on 11/26/2026 |')).toBe(true);
    expect(dated('As of November 2026 it does; on 26 November 2026 too; Nov 26, 2026.')).toBe(true);
    expect(dated('kept in `results/runs/full-2026-12-01/`')).toBe(false);
    expect(dated('[the run](../results/runs/full-2026-12-01/README.md)')).toBe(false);
    expect(dated('it registers at /2020-01-01/extension/register')).toBe(false);
    expect(dated('<a id="kafka-client-cpu-per-event-2026-11-26"></a>Kafka')).toBe(false);
    expect(dated('```text\n[Nest] 4242  - 11/25/2026, 10:01:57 PM\n```')).toBe(false);
    expect(dated('2,048 items, 20 ms, version 2.0.2026')).toBe(false);
  });
});
