import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually';
import { freePort } from './free-port';

/** One series of an instant query: its labels and value. */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** One series of a range query: its labels and `[unix seconds, value]` points. */
export interface PromRange {
  metric: Record<string, string>;
  values: Array<[number, number]>;
}

/**
 * A private Prometheus server for integration tests: its own free port on 127.0.0.1, a temporary
 * config scraping one target every `scrapeIntervalMs`, its TSDB in a temporary directory (removed by
 * `stop()`), queried through its HTTP API.
 *
 * The binary is `prometheus` on the PATH, or `$PROMETHEUS_BIN`. If it cannot start, `start()` throws
 * an error saying how to provide one: tests must fail, never skip silently.
 */
export class PrometheusServer {
  port = 0;
  private child: ChildProcess | undefined;
  private output = '';
  private readonly dir = mkdtempSync(join(tmpdir(), 'deferred-work-prometheus-'));
  private readonly bin = process.env.PROMETHEUS_BIN || 'prometheus';

  constructor(private readonly target: { host: string; port: number; path: string }, private readonly scrapeIntervalMs = 250) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = await freePort();
    const interval = `${this.scrapeIntervalMs}ms`;
    const config = [
      'global:',
      `  scrape_interval: ${interval}`,
      `  evaluation_interval: ${interval}`,
      'scrape_configs:',
      '  - job_name: app',
      `    scrape_interval: ${interval}`,
      `    scrape_timeout: ${interval}`,
      `    metrics_path: ${this.target.path}`,
      '    static_configs:',
      `      - targets: ['${this.target.host}:${this.target.port}']`,
      '',
    ].join('\n');
    writeFileSync(join(this.dir, 'prometheus.yml'), config);
    const args = [
      `--config.file=${join(this.dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(this.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${this.port}`,
      '--log.level=warn',
    ];
    const child = spawn(this.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => reject(this.howToFix(error.code === 'ENOENT' ? 'not found' : error.message)));
      child.once('exit', (code) => reject(this.howToFix(`exited at start (code ${code}): ${this.output.trim().slice(-500)}`)));
    });
    failed.catch(() => undefined);
    const ready = eventually(async () => {
      const res = await fetch(`${this.url}/-/ready`);
      if (!res.ok) throw new Error(`not ready: ${res.status}`);
    }, 20_000, 100);
    try {
      await Promise.race([ready, failed]);
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** An instant query (at `time`, unix seconds, or now). */
  async query(promql: string, time?: number): Promise<PromSample[]> {
    const params = new URLSearchParams({ query: promql });
    if (time !== undefined) params.set('time', String(time));
    const data = await this.api<{ resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> }>('query', params);
    if (data.resultType === 'scalar') return [{ metric: {}, value: Number((data.result as unknown as [number, string])[1]) }];
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** A range query from `start` to `end` (unix seconds) every `stepSeconds`. */
  async queryRange(promql: string, start: number, end: number, stepSeconds: number): Promise<PromRange[]> {
    const params = new URLSearchParams({ query: promql, start: String(start), end: String(end), step: String(stepSeconds) });
    const data = await this.api<{ result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> }>('query_range', params);
    return data.result.map((r) => ({ metric: r.metric, values: r.values.map(([t, v]) => [t, Number(v)] as [number, number]) }));
  }

  /** Resolves once Prometheus has scraped the target after this call (its `up` sample is newer). */
  async scraped(): Promise<void> {
    const after = Date.now() / 1000;
    await eventually(async () => {
      const up = await this.api<{ result: Array<{ value: [number, string] }> }>('query', new URLSearchParams({ query: 'timestamp(up{job="app"})' }));
      const at = Number(up.result[0]?.value[1] ?? 0);
      if (!(at > after)) throw new Error(`no scrape since ${after} (last ${at})`);
    }, 10_000, 50);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async api<T>(path: string, params: URLSearchParams): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${path}?${params}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path} ${params.get('query')}: ${body.error ?? res.status}`);
    return body.data;
  }

  private howToFix(problem: string): Error {
    return new Error(
      `Cannot start a private Prometheus for the metrics tests: "${this.bin}" ${problem}. ` +
        'These tests need a prometheus binary (2.x; they start their own on a free port, with a temporary config and TSDB). ' +
        'Install one (Debian/Ubuntu: apt-get install prometheus; .ci/run does it) or point PROMETHEUS_BIN at the binary.',
    );
  }
}
