import { Agent, request } from 'node:http';

/** An event of the Extensions API's `event/next` (an internal extension gets `INVOKE` only). */
export interface ExtensionEvent {
  eventType: 'INVOKE' | 'SHUTDOWN' | string;
  /** The invocation's deadline (its function timeout), epoch ms. */
  deadlineMs: number;
  requestId?: string;
  invokedFunctionArn?: string;
  shutdownReason?: string;
}

/** An answer of the Extensions API other than the one expected. */
export class ExtensionsApiError extends Error {
  override readonly name = 'ExtensionsApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const VERSION = '/2020-01-01/extension';

/**
 * The Lambda Extensions API (version 2020-01-01) at `AWS_LAMBDA_RUNTIME_API`, as its reference documents
 * it: `register` (header `Lambda-Extension-Name`, answered with `Lambda-Extension-Identifier`),
 * `event/next` (blocking, no timeout: the environment may be frozen while it waits), `init/error` and
 * `exit/error` (header `Lambda-Extension-Function-Error-Type`).
 */
export class ExtensionsApi {
  /** One connection, kept alive: `event/next` waits across freezes on it. */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly endpoint: string) {}

  /** Registers for `INVOKE` events; resolves with the extension's identifier. */
  async register(name: string): Promise<string> {
    const { status, headers, body } = await this.call('POST', '/register', { 'Lambda-Extension-Name': name }, JSON.stringify({ events: ['INVOKE'] }));
    const id = headers['lambda-extension-identifier'];
    if (status !== 200 || typeof id !== 'string' || id === '') throw new ExtensionsApiError(status, `HTTP ${status}${body ? `: ${body.slice(0, 300)}` : ''}`);
    return id;
  }

  /**
   * Signals this invocation done and waits (across a freeze) for the next event. Rejects with an
   * {@link ExtensionsApiError} when Lambda answered otherwise (`403`, `500`: no further call succeeds),
   * and with the transport's error (`ECONNRESET`, …) when no answer came.
   */
  async next(id: string): Promise<ExtensionEvent> {
    const { status, body } = await this.call('GET', '/event/next', { 'Lambda-Extension-Identifier': id });
    if (status !== 200) throw new ExtensionsApiError(status, `event/next answered HTTP ${status}${body ? `: ${body.slice(0, 300)}` : ''}`);
    try {
      return JSON.parse(body) as ExtensionEvent;
    } catch {
      throw new ExtensionsApiError(status, `event/next answered HTTP 200 with a body that is not JSON: ${body.slice(0, 300)}`);
    }
  }

  /** Reports a failure to initialise after registering (Lambda then fails the Init). */
  async initError(id: string, type: string, error: Error): Promise<void> {
    await this.reportError('/init/error', id, type, error);
  }

  /** Reports an unexpected failure before the extension stops (no further call succeeds). */
  async exitError(id: string, type: string, error: Error): Promise<void> {
    await this.reportError('/exit/error', id, type, error);
  }

  private async reportError(path: string, id: string, type: string, error: Error): Promise<void> {
    const payload = JSON.stringify({ errorMessage: error.message, errorType: error.name, stackTrace: (error.stack ?? '').split('\n').slice(1).map((l) => l.trim()) });
    await this.call('POST', path, { 'Lambda-Extension-Identifier': id, 'Lambda-Extension-Function-Error-Type': type }, payload);
  }

  private call(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
    const [host, port] = this.endpoint.split(':');
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host,
          port: Number(port || 80),
          method,
          path: VERSION + path,
          agent: this.agent,
          headers: body === undefined ? headers : { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}
