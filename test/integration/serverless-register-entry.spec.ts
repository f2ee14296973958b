import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';

/**
 * The built preload entry `nestjs-deferred-work/serverless/register` (dist/, as the package ships it),
 * loaded by name as Lambda's `NODE_OPTIONS` would: with `--import`, the extension is registered — the
 * Extensions API has answered — before the handler module's first line runs; with `-r` (CommonJS), the
 * process stops at once with an error that says to use `--import`. Needs `pnpm build` (the README's test
 * command runs it first).
 */
const PACKAGE_DIR = fileURLToPath(new URL('../../packages/nestjs-deferred-work/', import.meta.url));
const children: ChildProcess[] = [];
let server: Server | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  }
});

function body(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => resolve(text));
  });
}

/** A process of `node <flags> -e <code>` in the package's own folder (so the package's name resolves to its dist/). */
function node(flags: string[], code: string, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [...flags, '-e', code], { cwd: PACKAGE_DIR, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => (out.stdout += chunk));
  child.stderr!.on('data', (chunk) => (out.stderr += chunk));
  return { child, out };
}

describe('the preload entry nestjs-deferred-work/serverless/register', () => {
  it('with --import: registers the extension (INVOKE only) before the handler module runs, then waits for its first event', async () => {
    const registrations: Array<{ name: string | undefined; body: unknown }> = [];
    let answeredAt = 0;
    let nextCalls = 0;
    server = createServer(async (request, response) => {
      if (request.method === 'POST' && request.url === '/2020-01-01/extension/register') {
        registrations.push({ name: request.headers['lambda-extension-name'] as string | undefined, body: JSON.parse(await body(request)) });
        // Answered late: a preload that did not wait for the answer would let the handler module run first.
        await new Promise((resolve) => setTimeout(resolve, 300));
        answeredAt = Date.now();
        response.writeHead(200, { 'Lambda-Extension-Identifier': 'ext-1', 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ functionName: 'fn', functionVersion: '$LATEST', handler: 'index.handler' }));
        return;
      }
      if (request.method === 'GET' && request.url === '/2020-01-01/extension/event/next') {
        if (request.headers['lambda-extension-identifier'] === 'ext-1') nextCalls++;
        return; // held, as Lambda holds it until the first invocation
      }
      response.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;

    const { child, out } = node(['--import=nestjs-deferred-work/serverless/register'], "console.log('handler module loaded at ' + Date.now())", {
      AWS_LAMBDA_RUNTIME_API: `127.0.0.1:${port}`,
      AWS_LAMBDA_FUNCTION_NAME: 'fn',
    });
    const deadline = Date.now() + 20_000;
    while (!(/loaded at \d+/.test(out.stdout) && nextCalls > 0) && child.exitCode === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect({ exit: child.exitCode, stderr: out.stderr }).toEqual({ exit: null, stderr: '' });
    expect(registrations).toEqual([{ name: 'nestjs-deferred-work', body: { events: ['INVOKE'] } }]);
    // The handler module's first line ran after Lambda answered the registration.
    const loadedAt = Number(/loaded at (\d+)/.exec(out.stdout)?.[1]);
    expect(answeredAt).toBeGreaterThan(0);
    expect(loadedAt).toBeGreaterThanOrEqual(answeredAt);
    // Then the extension asked for its first event (its Init done), with the identifier Lambda gave it.
    expect(nextCalls).toBe(1);
  }, 30_000);

  it('with -r (CommonJS): the process stops at once with an error that says to load it with --import', async () => {
    const { child, out } = node(['-r', 'nestjs-deferred-work/serverless/register'], "console.log('handler module loaded')");
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain('nestjs-deferred-work/serverless/register is loaded with --import, not with -r or require()');
    expect(out.stderr).toContain("NODE_OPTIONS='--import=nestjs-deferred-work/serverless/register'");
  }, 30_000);
});
