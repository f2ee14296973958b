import type { DeferredStats, SinkStats } from '../core/stats.interface';
import { MemoryDeadLetterStore } from '../pipeline/dead-letters/memory-dead-letter.store';
import { actorOf, type ConsoleRequest, originProblem, rootHref, tokenMatches } from './console-http';
import { resolveConsoleOptions } from './console-options';
import { DeferredWorkConsoleModule } from './deferred-work-console.module';
import { MAX_SINKS, StatsHistory } from './stats-history';
import { detailContent } from './views/dead-letters.view';
import { escapeHtml, html } from './views/html';

class Guard {
  canActivate() {
    return true;
  }
}

const options = (extra: object = {}) => resolveConsoleOptions({ guards: [Guard], ...extra });
const request = (headers: Record<string, string>, encrypted = false): ConsoleRequest => ({ headers, socket: { encrypted } });

describe('DeferredWorkConsoleModule options', () => {
  it('refuses to mount without a guard, and says how to fix each bad option', () => {
    expect(() => DeferredWorkConsoleModule.forRoot({ guards: [] })).toThrow(/no guard given.*Pass forRoot\(\{ guards: \[YourAdminGuard\] \}\)/);
    expect(() => DeferredWorkConsoleModule.forRoot(undefined as never)).toThrow(/guards/);
    expect(() => options({ traceUrl: 'https://tempo/trace/' })).toThrow(/containing \{traceId\}/);
    expect(() => options({ allowedOrigins: ['https://ops.example.com/path'] })).toThrow(/not an origin/);
    expect(() => options({ refreshMs: 10 })).toThrow(/refreshMs.*from 1000 to 60000.*Leave it out for 5000/);
    expect(() => options({ path: '../x?' })).toThrow(/path/);
    expect(options({ path: '/ops/dw/' })).toMatchObject({ path: 'ops/dw', refreshMs: 5000, sampleIntervalMs: 10_000, showPayloads: false, trustProxy: false, pageSize: 50 });
  });
});

describe('the console over HTTP', () => {
  it('links relative to the page, under any prefix, with or without a trailing slash', () => {
    expect(rootHref('/api/ops/console', 0)).toBe('./console/');
    expect(rootHref('/api/ops/console/', 0)).toBe('./');
    expect(rootHref('/api/ops/console/routes', 1)).toBe('./');
    expect(rootHref('/api/ops/console/dead-letters/record', 2)).toBe('../');
    expect(rootHref('/x/dead-letters/record/', 2)).toBe('../../');
  });

  it("accepts a post from the console's origin or an allowed one, and the proxy's forwarded origin only when trusted", () => {
    const own = options();
    expect(originProblem(request({ host: 'app:3000', origin: 'http://app:3000' }), own)).toBeUndefined();
    expect(originProblem(request({ host: 'app:3000', origin: 'http://evil.example' }), own)).toMatch(/not the console's \(http:\/\/app:3000\); behind a reverse proxy set trustProxy/);
    expect(originProblem(request({ host: 'app:3000' }), own)).toMatch(/no Origin or Referer/);
    expect(originProblem(request({ host: 'app:3000', referer: 'http://app:3000/ops/x' }), own)).toBeUndefined();
    const proxied = { host: 'app:3000', 'x-forwarded-host': 'ops.example.com', 'x-forwarded-proto': 'https', origin: 'https://ops.example.com' };
    expect(originProblem(request(proxied), own)).toBeDefined();
    expect(originProblem(request(proxied), options({ trustProxy: true }))).toBeUndefined();
    expect(originProblem(request({ host: 'app:3000', origin: 'https://admin.example.com' }), options({ allowedOrigins: ['https://admin.example.com'] }))).toBeUndefined();
  });

  it("takes the token only when it equals the cookie's, and logs the guard's user", () => {
    const token = 'a'.repeat(32);
    expect(tokenMatches(request({ cookie: `x=1; dw-console-csrf=${token}` }), token)).toBe(true);
    expect(tokenMatches(request({ cookie: `dw-console-csrf=${token}` }), 'b'.repeat(32))).toBe(false);
    expect(tokenMatches(request({}), token)).toBe(false);
    expect(tokenMatches(request({ cookie: `dw-console-csrf=${token}` }), undefined)).toBe(false);
    expect(actorOf({ headers: {}, user: { username: 'ana' } })).toBe('ana');
    expect(actorOf({ headers: {}, user: { sub: 42 } })).toBe('42');
    expect(actorOf({ headers: {} })).toBe('unknown');
  });
});

describe('the console views', () => {
  it('escapes every value, markup made by html`` alone passes', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&\``)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;');
    expect(html`<p>${'<script>'}${html`<b>${'"'}</b>`}${['<i>', 1]}</p>`.text).toBe('<p>&lt;script&gt;<b>&quot;</b>&lt;i&gt;1</p>');
  });

  it("links a dead letter's trace id through the template, escaped", () => {
    const at = Date.now();
    const record = {
      id: 'dw-1:http', sink: 'http', reason: 'expired' as const, attempts: 3, at, firstAt: at, redrives: 1,
      item: { kind: 'job' as const, queue: 'q', name: 'n', data: {}, when: 'success' as const, createdAt: at, id: 'dw-1', correlation: { requestId: 'r"1', traceId: '0af7651916cd43dd8448eb211c80319c' } },
    };
    const page = detailContent({ root: './', instance: 'i', token: 't' }, record, undefined, 'Hidden', 'https://tempo.example.com/trace/{traceId}?a=1&b=2').text;
    expect(page).toContain('<a href="https://tempo.example.com/trace/0af7651916cd43dd8448eb211c80319c?a=1&amp;b=2" rel="noreferrer">0af7651916cd43dd8448eb211c80319c</a>');
    expect(page).toContain('r&quot;1');
  });
});

describe('StatsHistory', () => {
  const sink = (delivered: number, pending = 0) => ({ delivered, pending, failedWrites: 0, retried: 0, deadLettered: 0 }) as SinkStats;
  const stats = (sinks: Record<string, SinkStats>) => ({ sinks }) as unknown as DeferredStats;

  it('keeps under 1 MB with the most sinks it charts, and ignores sinks past them', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_SINKS + 10 }, (_, i) => [`s${i}`, sink(i)]));
    const history = new StatsHistory(() => stats(many), 1000);
    for (let i = 0; i < 2 * history.capacity; i++) history.sample(i * 1000);
    expect(history.bytes).toBeLessThan(1_000_000);
    expect(history.gauge(`s${MAX_SINKS + 1}`, 'pending').values).toEqual([]);
  });

  it('reads the rate over the last minute and the rates between samples', () => {
    let delivered = 0;
    const history = new StatsHistory(() => stats({ a: sink(delivered) }), 10_000);
    for (let t = 0; t <= 120_000; t += 10_000) {
      history.sample(t);
      delivered += 50; // 300 a minute
    }
    expect(history.rateOverLastMinute('a', 'delivered', 600, 120_000)).toBe(300);
    expect(history.perMinute('a', 'delivered').values.every((v) => v === 300)).toBe(true);
    expect(new StatsHistory(() => stats({}), 1000).rateOverLastMinute('a', 'delivered', 1)).toBeUndefined();
  });
});

describe('the error-code filter of the memory store', () => {
  it('lists, counts and purges by code', () => {
    const store = new MemoryDeadLetterStore({ maxCount: 100, maxBytes: 1e6, maxAgeMs: 60_000 });
    const at = Date.now();
    store.add(['400', '422', '400'].map((code, i) => ({ id: `dw-${i}:h`, sink: 'h', reason: 'not-retryable', code, attempts: 1, at, firstAt: at, redrives: 0, item: { kind: 'log', level: 'info', message: 'm', when: 'always', createdAt: at } })));
    expect(store.count({ code: '400' })).toBe(2);
    expect(store.list({ code: '422' }).records.map((r) => r.id)).toEqual(['dw-1:h']);
    expect(store.purge({ code: '400' })).toBe(2);
    expect(store.count({})).toBe(1);
  });
});
