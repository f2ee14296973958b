import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
 * Dead-letter triage in a real Chromium, on Express and on Fastify under a global prefix: 50 jobs
 * refused by the receiver (40 with 400, 10 with 422) are listed and filtered; a payload holding markup
 * is shown as text; a post from another origin, a post without the token and a GET to an action's URL
 * change nothing; discard and purge change the counts they show; "redrive all matching" shows the dry
 * run's count first, then delivers each item exactly once (by id) and empties the list.
 */

failOnUnhandledRejection();

const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror=window.__pwned=2>';
const setups = [
  { platform: platforms[0]!, prefix: undefined, shots: true },
  { platform: platforms[1]!, prefix: 'api', shots: false },
];

describe.each(setups)('dead letters in the console on $platform.name (prefix $prefix)', ({ platform, prefix, shots }) => {
  const redisServer = new RedisServer();
  let redis: Redis;
  let receiver: HttpReceiver;
  let app: ConsoleApp;
  let browser: TestBrowser;
  let page: Page;
  let other: Server;
  let otherPage = '';

  beforeAll(async () => {
    await redisServer.start();
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    receiver = await HttpReceiver.start((request) => ({ status: (request.items[0] as { data: { n: number } }).data.n >= 40 ? 422 : 400 }));
    app = await startConsoleApp({ platform, prefix, redis, httpUrl: receiver.url('/ingest'), console: { showPayloads: true } });
    browser = await startBrowser({ httpCredentials: CONSOLE_USER });
    page = await browser.page();
    // another origin (another port): a page whose form posts to the console
    other = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(otherPage));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await receiver?.close();
    await new Promise((resolve) => other?.close(resolve));
    redis?.disconnect();
    await redisServer.dispose();
  });

  const count = () => app.work.countDeadLetters();
  const matching = async () => Number(await page.textContent('[data-field="matching"]'));
  const rows = () => page.$$eval('tbody[data-field="rows"] tr[data-id]', (trs) => trs.map((tr) => tr.getAttribute('data-id')!));
  const list = async (query = '') => {
    await page.goto(`${app.consoleUrl}/dead-letters${query}`);
    return { matching: await matching(), rows: await rows() };
  };

  it('lists the 50 dead letters of a refusing receiver, and the filters narrow them', async () => {
    const base = `${app.url}${prefix ? `/${prefix}` : ''}/work/job`;
    for (let n = 0; n < 50; n++) {
      const note = n === 7 ? `&note=${encodeURIComponent(HOSTILE)}` : '';
      await fetch(`${base}?n=${n}${note}`, { headers: { 'x-request-id': `req-${n}` } });
    }
    await eventually(async () => expect(await count()).toBe(50), 10_000, 50);
    expect(await list()).toMatchObject({ matching: 50 });
    expect((await rows()).length).toBe(50);
    expect((await list('?sink=http')).matching).toBe(50);
    expect((await list('?sink=redis')).matching).toBe(0);
    expect((await list('?reason=not-retryable')).matching).toBe(50);
    expect((await list('?code=400')).matching).toBe(40);
    expect((await list('?code=422')).matching).toBe(10);
    expect((await list('?code=422&reason=expired')).matching).toBe(0);
    expect((await list(`?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).matching).toBe(0);
    // through the form, as a person would
    await page.goto(`${app.consoleUrl}/dead-letters`);
    await page.fill('input[name="code"]', '422');
    await Promise.all([page.waitForNavigation(), page.click('form.filter button[type="submit"]')]);
    expect(await matching()).toBe(10);
    if (shots) await screenshot(page, 'dead-letters');
  });

  it("shows a record's history and request id, and its payload with markup as text", async () => {
    const id = (await app.work.listDeadLetters({ limit: 100 })).records.find((r) => (r.item as { data: { n: number } }).data.n === 7)!.id;
    await page.goto(`${app.consoleUrl}/dead-letters/record?id=${encodeURIComponent(id)}`);
    expect(await page.textContent('[data-field="requestId"]')).toBe('req-7');
    expect(await page.textContent('[data-field="attempts"]')).toBe('1');
    expect(await page.textContent('[data-field="payload"]')).toContain(HOSTILE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.$$eval('script', (s) => s.map((e) => e.getAttribute('src')))).toEqual([expect.stringMatching(/assets\/console\.js$/)]);
    expect(await page.$$('main img')).toHaveLength(0);
    if (shots) await screenshot(page, 'dead-letter');
    expect(browser.errors).toEqual([]);
  });

  it('changes nothing for a post from another origin, a post without the token, or a GET to an action', async () => {
    const logged = browser.errors.length;
    try {
      await refusesForeignPosts();
    } finally {
      // the refused posts' 403s are logged by the browser, as they should; anything else stays for the next check
      const others = browser.errors.splice(logged).filter((error) => !/status of 403/.test(error));
      browser.errors.push(...others);
    }
  });

  async function refusesForeignPosts(): Promise<void> {
    await page.goto(`${app.consoleUrl}/dead-letters`);
    const token = (await browser.context.cookies()).find((c) => c.name === 'dw-console-csrf')!.value;
    const purgeUrl = `${app.consoleUrl}/dead-letters/purge`;
    // another origin's page, holding even the right token: refused by its Origin
    otherPage = `<form method="post" action="${purgeUrl}"><input name="_csrf" value="${token}"><input name="scope" value="filter"><input name="confirm" value="yes"><button>go</button></form>`;
    const attacker = await browser.page();
    await attacker.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
    const answered = attacker.waitForResponse((r) => r.url() === purgeUrl && r.status() !== 401, { timeout: 10_000 });
    await attacker.click('button');
    const response = await answered;
    expect(response.status()).toBe(403);
    // Close only once the navigation has loaded: Chromium can drop a close that races a cross-origin
    // navigation's commit, and page.close() then never returns.
    await attacker.waitForURL(purgeUrl, { waitUntil: 'load', timeout: 10_000 });
    await attacker.close();
    // the console's own origin, without the token
    const status = await page.evaluate(
      (url) => fetch(url, { method: 'POST', body: new URLSearchParams({ scope: 'filter', confirm: 'yes' }) }).then((r) => r.status),
      purgeUrl,
    );
    expect(status).toBe(403);
    // a GET to each action's URL
    for (const action of ['redrive', 'discard', 'purge']) {
      const res = await fetch(`${app.consoleUrl}/dead-letters/${action}?scope=filter&confirm=yes&_csrf=${token}`, { headers: { authorization: basicAuth() } });
      expect([action, res.status]).toEqual([action, 404]);
    }
    expect(await count()).toBe(50);
  }

  it('discards the selected and purges all matching (after the count), each reporting its counts', async () => {
    await page.goto(`${app.consoleUrl}/dead-letters?code=400`);
    const boxes = await page.$$('tbody input[name="id"]');
    await boxes[0]!.check();
    await boxes[1]!.check();
    await Promise.all([page.waitForNavigation(), page.click('[data-action="discard-selected"]')]);
    expect(await page.textContent('[data-field="result"]')).toBe('Discarded 2 of 2');
    expect(await count()).toBe(48);
    await page.goto(`${app.consoleUrl}/dead-letters?code=422`);
    await Promise.all([page.waitForNavigation(), page.click('[data-action="purge-all"]')]);
    expect(await page.textContent('[data-field="would"]')).toBe('10');
    expect(await count()).toBe(48); // the confirmation page changed nothing
    await Promise.all([page.waitForNavigation(), page.click('[data-action="confirm-purge"]')]);
    expect(await page.textContent('[data-field="purged"]')).toBe('10');
    expect(await count()).toBe(38);
    expect((await list()).matching).toBe(38);
  });

  it('redrives all matching after the dry run: each item delivered exactly once by id, and the list empties', async () => {
    receiver.responder = () => ({ status: 200 });
    const expected = (await app.work.listDeadLetters({ limit: 100 })).records.map((r) => r.item.id).sort();
    await page.goto(`${app.consoleUrl}/dead-letters`);
    await Promise.all([page.waitForNavigation(), page.click('[data-action="redrive-all"]')]);
    expect(await page.textContent('[data-field="matched"]')).toBe('38');
    expect(await page.textContent('[data-field="would"]')).toBe('38');
    if (shots) await screenshot(page, 'redrive-confirm');
    expect(receiver.delivered('/ingest')).toHaveLength(0); // the dry run sent nothing
    await Promise.all([page.waitForNavigation(), page.click('[data-action="confirm-redrive"]')]);
    expect(await page.textContent('[data-field="result"]')).toBe('Redrove 38 of 38');
    await receiver.waitForDelivered(38, '/ingest');
    expect(await app.work.settled(5000)).toBe(true);
    const ids = (receiver.delivered('/ingest') as Array<{ id: string }>).map((item) => item.id).sort();
    expect(ids).toEqual(expected);
    expect((await list()).matching).toBe(0);
    expect(await rows()).toEqual([]);
    expect(browser.errors).toEqual([]);
  });
});
