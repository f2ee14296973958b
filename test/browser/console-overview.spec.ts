import { hostname } from 'node:os';
import Redis from 'ioredis';
import type { Page } from 'playwright-core';
import { startBrowser, type TestBrowser } from '../support/browser';
import { basicAuth, type ConsoleApp, CONSOLE_USER, startConsoleApp } from '../support/console-app';
import { screenshot } from '../support/console-screenshots';
import { eventually } from '../support/eventually';
import { HttpReceiver } from '../support/http-receiver';
import { failOnUnhandledRejection, platforms } from '../support/platforms';
import { RedisServer } from '../support/redis-server';

/**
 * The console in a real Chromium against a real app and a private Redis, on Express and on Fastify
 * (Fastify under a global prefix): the guard covers every URL, the page renders without console
 * errors and with its CSP, the overview's figures are `stats()`'s, a Redis outage shows within one
 * refresh (1 s here) and clears, and the routes page shows the route's quantiles.
 */

failOnUnhandledRejection();

const setups = [
  { platform: platforms[0]!, prefix: undefined, shots: true },
  { platform: platforms[1]!, prefix: 'api', shots: false },
];

describe.each(setups)('the console on $platform.name (prefix $prefix)', ({ platform, prefix, shots }) => {
  const redisServer = new RedisServer();
  let redis: Redis;
  let receiver: HttpReceiver;
  let app: ConsoleApp;
  let browser: TestBrowser;
  let page: Page;

  beforeAll(async () => {
    await redisServer.start();
    redis = new Redis({ host: redisServer.host, port: redisServer.port, retryStrategy: () => 100, maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    receiver = await HttpReceiver.start();
    app = await startConsoleApp({ platform, prefix, redis, httpUrl: receiver.url('/ingest') });
    browser = await startBrowser({ httpCredentials: CONSOLE_USER });
    page = await browser.page();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await receiver?.close();
    redis?.disconnect();
    await redisServer.dispose();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${app.consoleUrl}${path}`, { headers, redirect: 'manual' });
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${app.consoleUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(app.consoleUrl).origin, ...headers } });

  it('answers 401 without the login for the page, its data, its assets and every action; with it, serves each', async () => {
    const reads = ['', '/overview/fragment', '/overview.json', '/routes', '/dead-letters', '/dead-letters/record?id=x', '/assets/console.js', '/assets/console.css', '/assets/icon.svg'];
    const actions = ['/dead-letters/redrive', '/dead-letters/discard', '/dead-letters/purge'];
    for (const path of reads) expect([path, (await get(path)).status]).toEqual([path, 401]);
    for (const path of actions) expect([path, (await post(path, 'scope=filter&confirm=yes&_csrf=x')).status]).toEqual([path, 401]);
    for (const path of reads.filter((p) => !p.includes('record'))) expect([path, (await get(path, { authorization: basicAuth() })).status]).toEqual([path, 200]);
  });

  it('renders with the login: the instance named, a Content-Security-Policy without inline script or style, no error in the browser console', async () => {
    const response = await page.goto(app.consoleUrl);
    expect(response!.status()).toBe(200);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(await page.textContent('[data-field="instance"]')).toBe(`${hostname()} (pid ${process.pid})`);
    for (const path of ['/routes', '/dead-letters', '']) await page.goto(`${app.consoleUrl}${path}`);
    await page.waitForTimeout(1500); // one refresh of the overview
    expect(browser.errors).toEqual([]);
  });

  async function cells(sink: string): Promise<Record<string, string>> {
    return page.$$eval(`tr[data-sink="${sink}"] [data-field]`, (nodes) => Object.fromEntries(nodes.map((n) => [n.getAttribute('data-field'), n.getAttribute('data-value') ?? n.textContent ?? ''])));
  }

  it("with traffic stopped, shows stats()'s figures for every sink and the callbacks", async () => {
    for (let n = 0; n < 20; n++) await fetch(`${app.url}${prefix ? `/${prefix}` : ''}/work/order?n=${n}`);
    for (let n = 0; n < 5; n++) await fetch(`${app.url}${prefix ? `/${prefix}` : ''}/work/job?n=${n}`);
    expect(await app.work.settled(5000)).toBe(true);
    await page.goto(app.consoleUrl);
    const stats = app.work.stats();
    for (const name of ['redis', 'http', 'memory']) {
      const s = stats.sinks[name]!;
      const shown = await cells(name);
      expect({ name, ...shown }).toMatchObject({
        name,
        state: 'up',
        pending: String(s.pending),
        inFlight: String(s.inFlight),
        oldestPendingAgeMs: String(s.oldestPendingAgeMs ?? 0),
        delivered: String(s.delivered),
        failedWrites: String(s.failedWrites),
        retried: String(s.retried),
        deadLettered: String(s.deadLettered),
      });
    }
    expect(Number((await cells('redis')).delivered)).toBe(20);
    expect(await page.textContent('[data-field="callbacksRunning"]')).toBe(String(stats.callbacks.running));
    expect(await page.textContent('[data-field="callbacksOverdue"]')).toBe(String(stats.callbacks.overdue));
    expect(await page.textContent('[data-field="accepted"]')).toBe(String(stats.accepted));
    const data = (await (await get('/overview.json', { authorization: basicAuth() })).json()) as { stats: { accepted: number } };
    expect(data.stats.accepted).toBe(stats.accepted);
  });

  it('shows the Redis sink failing with its error code within one refresh of an outage, pending rising, and up again after', async () => {
    await page.goto(app.consoleUrl);
    await redisServer.stop();
    const stoppedAt = Date.now();
    const base = `${app.url}${prefix ? `/${prefix}` : ''}/work/order`;
    for (let n = 0; n < 10; n++) await fetch(`${base}?n=${n}`);
    await page.waitForSelector('tr[data-sink="redis"] [data-field="state"]:text-is("failing")', { timeout: 4000 });
    const failingAfterMs = Date.now() - stoppedAt;
    const during = await cells('redis');
    expect(during.lastErrorCode).toMatch(/^[A-Z]+$/);
    expect(app.work.stats().sinks.redis!.lastErrorCode).toBe(during.lastErrorCode);
    const pendingBefore = Number(during.pending);
    expect(pendingBefore).toBeGreaterThan(0);
    for (let n = 10; n < 30; n++) await fetch(`${base}?n=${n}`);
    await eventually(async () => expect(Number((await cells('redis')).pending)).toBeGreaterThan(pendingBefore), 4000, 100);
    if (shots) await screenshot(page, 'overview-outage');
    await redisServer.start();
    await page.waitForSelector('tr[data-sink="redis"] [data-field="state"]:text-is("up")', { timeout: 15_000 });
    await eventually(async () => expect((await cells('redis')).pending).toBe('0'), 4000, 100);
    console.log(`${platform.name}: failing shown ${failingAfterMs} ms after the outage began; pending ${pendingBefore} → higher; up again`);
    if (shots) await screenshot(page, 'overview');
    expect(browser.errors).toEqual([]);
  });

  it("shows each measured route's handler and send times as p50/p95 and its items per request", async () => {
    await page.goto(`${app.consoleUrl}/routes`);
    const route = app.work.stats().routes['GET /work/order']!;
    const row = await page.$$eval('tr[data-route="GET /work/order"] [data-field]', (nodes) => Object.fromEntries(nodes.map((n) => [n.getAttribute('data-field'), n.textContent])));
    expect(row.count).toBe(String(route.count));
    expect(Number(row.handlerMsP50)).toBeCloseTo(route.handlerMsP50, 1);
    expect(Number(row.sendMsP95)).toBeCloseTo(route.sendMsP95, 1);
    expect(row.itemsAvg).toBe('2');
    expect(row.itemsMax).toBe('2');
    if (shots) await screenshot(page, 'routes');
  });
});
