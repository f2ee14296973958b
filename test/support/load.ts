import { Agent, get as httpGet } from 'node:http';
import type { DeferredStats, DeferredWork } from 'nestjs-deferred-work';
import { eventually } from './eventually';

export const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** GETs every path with `concurrency` requests at a time; resolves with the statuses (0 for a network error). */
export async function load(
  url: string,
  paths: string[],
  concurrency: number,
  onResponse?: (done: number) => void,
): Promise<number[]> {
  const statuses: number[] = new Array(paths.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < paths.length) {
      const i = next++;
      try {
        const res = await fetch(url + paths[i]);
        await res.arrayBuffer();
        statuses[i] = res.status;
      } catch {
        statuses[i] = 0;
      }
      onResponse?.(++done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}

/** The accounting identity, for the totals and the named sink. */
export function identityHolds(stats: DeferredStats, sink: string): boolean {
  const s = stats.sinks[sink];
  return (
    stats.accepted === stats.delivered + stats.pending + stats.dropped + stats.deadLettered &&
    s.accepted === s.delivered + s.pending + s.dropped + s.deadLettered
  );
}

/** Checks the identity every few ms while `during` runs; resolves with the checks that failed. */
export async function watchIdentity(
  work: DeferredWork,
  during: Promise<unknown>,
  sink: string,
): Promise<{ checks: number; broken: DeferredStats[] }> {
  const broken: DeferredStats[] = [];
  let checks = 0;
  const timer = setInterval(() => {
    checks++;
    const stats = work.stats();
    if (!identityHolds(stats, sink)) broken.push(stats);
  }, 2);
  try {
    await during;
  } finally {
    clearInterval(timer);
  }
  return { checks, broken };
}

/** What `loadThroughOutage` needs of a Redis it can stop and start. */
interface Restartable {
  readonly running: boolean;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * Sends `paths` (5 at a time) while Redis goes down after the 40th response and comes back once the
 * sink has felt it (a failed write) and the 100th response is in, checking the accounting identity
 * every few ms. `whileDown` runs on each response while Redis is down, from the 46th to the 100th.
 */
export async function loadThroughOutage(options: {
  url: string;
  paths: string[];
  redis: Restartable;
  work: DeferredWork;
  sink: string;
  whileDown?: () => void;
}): Promise<{ statuses: number[]; watched: { checks: number; broken: DeferredStats[] } }> {
  const { redis, work, sink } = options;
  const outage: Promise<void>[] = [];
  const statuses = load(options.url, options.paths, 5, (done) => {
    if (done === 40) outage.push(redis.stop());
    if (done > 45 && done <= 100 && !redis.running) options.whileDown?.();
    // Back up once the outage has been felt (a write refused), so that it is never too short to matter.
    if (done === 100) {
      const felt = async () => {
        if (!(work.stats().sinks[sink].failedWrites > 0)) throw new Error('no failed write yet');
      };
      outage.push(Promise.all(outage).then(() => eventually(felt, 10_000)).then(() => redis.start()));
    }
  });
  const watched = await watchIdentity(work, statuses, sink);
  await Promise.all(outage);
  return { statuses: await statuses, watched };
}

/**
 * Sends GET requests at a steady `perSecond` for `durationMs` (each on its own, not waiting for the
 * one before), the path of the i-th from `path(i)`; resolves with every status (0 for a network error)
 * once all have answered. Bounded in count and time: `perSecond × durationMs / 1000` requests. Uses
 * `node:http` with a keep-alive agent and no connect timeout of its own: the app under test shares
 * this process's event loop, so a client timeout would measure the test machine, not the app.
 */
export async function loadAtRate(url: string, perSecond: number, durationMs: number, path: (i: number) => string): Promise<number[]> {
  const total = Math.floor((perSecond * durationMs) / 1000);
  const started = Date.now();
  const agent = new Agent({ keepAlive: true });
  const answers: Array<Promise<number>> = [];
  const errors = new Map<string, number>();
  const get = (target: string, again = true): Promise<number> =>
    new Promise<number>((resolve) => {
      const request = httpGet(target, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      });
      request.on('error', (error: Error & { code?: string }) => {
        // A kept-alive socket the server closed as the request left (its keepAliveTimeout): sent again
        // once on a new connection, as Node's docs advise; the app never saw it.
        if (again && request.reusedSocket && error.code === 'ECONNRESET') return resolve(get(target, false));
        errors.set(error.code ?? error.message, (errors.get(error.code ?? error.message) ?? 0) + 1);
        resolve(0);
      });
    });
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / perSecond;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    answers.push(get(url + path(i)));
  }
  const statuses = await Promise.all(answers);
  agent.destroy();
  if (errors.size > 0) console.log(`loadAtRate: requests that failed, by cause: ${JSON.stringify(Object.fromEntries(errors))}`);
  return statuses;
}
