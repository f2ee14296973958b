import {
  AWAITED_VARIANTS,
  BULL_SCENARIOS,
  BULLMQ_SCENARIOS,
  benchStreamName,
  STREAM_SCENARIOS,
  benchTableName,
  benchQueueName,
  DEFAULT_OPTIONS,
  DEFERRED_VARIANTS,
  expectedItems,
  offloadSinkName,
  PACKED_VARIANT,
  packedSinkName,
  parseArgs,
  routeHeaders,
  routeRequest,
  routePath,
  SCENARIOS,
  scenarioInfo,
  SPOOL_SETTLE_MS,
  SPOOL_VARIANT,
  spoolSinkName,
  USAGE,
  UsageError,
  VARIANTS,
  variantOrder,
  variantsOf,
  WORKER_VARIANTS,
} from '../src/bench/args';

describe('parseArgs', () => {
  it('defaults to every scenario on both adapters, with short bounded runs', () => {
    const options = parseArgs([]);
    expect(options.scenarios).toEqual([
      'sim5',
      'sim25',
      'bull-local',
      'bull-proxy',
      'http-log',
      'mix',
      'sim5-tail',
      'compression',
      'bullmq-local',
      'bullmq-proxy',
      'rabbitmq',
      'nats',
      'graphql',
      'pg-local',
      'mysql-local',
      'realistic',
      'redis-stream',
      'sqs-local',
    ]);
    expect(options.adapters).toEqual(['express', 'fastify']);
    expect(options).toMatchObject({ duration: DEFAULT_OPTIONS.duration, connections: 10, repeats: DEFAULT_OPTIONS.repeats, help: false });
    expect(options.duration).toBeGreaterThan(0);
  });

  it('reads --flag value and --flag=value', () => {
    const options = parseArgs(['--duration', '2.5', '--connections=50', '--repeats', '4', '--warmup=0', '--proxy-rtt', '64']);
    expect(options).toMatchObject({ duration: 2.5, connections: 50, repeats: 4, warmup: 0, proxyRttMs: 64 });
  });

  it('takes scenarios by id or by number, in the order given, without duplicates', () => {
    expect(parseArgs(['--scenarios', 'mix,1, sim25,mix']).scenarios).toEqual(['mix', 'sim5', 'sim25']);
    expect(parseArgs(['--scenarios=3,4']).scenarios).toEqual(['bull-local', 'bull-proxy']);
    expect(parseArgs(['--scenarios', '9,10']).scenarios).toEqual(['bullmq-local', 'bullmq-proxy']);
    expect(parseArgs(['--scenarios', 'bullmq-proxy,bull-local']).scenarios).toEqual(['bullmq-proxy', 'bull-local']);
  });

  it('takes one adapter or both', () => {
    expect(parseArgs(['--adapter', 'fastify']).adapters).toEqual(['fastify']);
    expect(parseArgs(['--adapter', 'express']).adapters).toEqual(['express']);
    expect(parseArgs(['--adapter', 'both']).adapters).toEqual(['express', 'fastify']);
  });

  it('ignores a lone "--" (pnpm bench -- --duration 2)', () => {
    expect(parseArgs(['--', '--duration', '4']).duration).toBe(4);
  });

  it('reads --variants: only those variants of each scenario, unknown ones refused', () => {
    const options = parseArgs(['--variants', 'plain,blocking,deferred,event-emitter,deferred-offload']);
    expect(options.variants).toEqual(['plain', 'blocking', 'deferred', 'event-emitter', 'deferred-offload']);
    expect(variantsOf('bull-local', options.variants)).toEqual(['plain', 'blocking', 'deferred', 'deferred-offload', 'event-emitter']);
    expect(variantsOf('mix', options.variants)).toEqual(['plain', 'blocking', 'deferred', 'event-emitter']);
    expect(parseArgs([]).variants).toBeUndefined();
    expect(() => parseArgs(['--variants', 'plain,defered'])).toThrow('Unknown variant "defered". Use some of plain, noop-interceptor,');
    expect(() => parseArgs(['--variants'])).toThrow('--variants needs a value');
  });

  it('reads --help, --cpu-prof and --out', () => {
    expect(parseArgs(['-h']).help).toBe(true);
    expect(parseArgs(['--cpu-prof', '--out', 'tmp-results'])).toMatchObject({ cpuProf: true, out: 'tmp-results' });
  });

  it.each([
    [['--duration', '0'], '--duration must be a number >= 1, got "0"'],
    [['--duration', 'fast'], '--duration must be a number >= 1, got "fast"'],
    [['--connections', '2.5'], '--connections must be a whole number >= 1'],
    [['--connections'], '--connections needs a value'],
    [['--duration', '--connections', '5'], '--duration needs a value'],
    [
      ['--scenarios', 'redis'],
      'Unknown scenario "redis". Use ids (sim5, sim25, bull-local, bull-proxy, http-log, mix, sim5-tail, compression, bullmq-local, bullmq-proxy, rabbitmq, nats, graphql, pg-local, mysql-local, realistic, redis-stream, sqs-local) or numbers 1-18',
    ],
    [['--scenarios', '19'], 'Unknown scenario "19"'],
    [['--scenarios', '0'], 'Unknown scenario "0"'],
    [['--scenarios', ','], '--scenarios is empty'],
    [['--adapter', 'koa'], '--adapter must be express, fastify or both, got "koa"'],
    [['--turbo'], 'Unknown option "--turbo". Run pnpm bench --help'],
  ])('rejects %j with a message saying what to pass', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(UsageError);
    expect(() => parseArgs(argv)).toThrow(message);
  });
});

describe('scenario catalog', () => {
  it('has the six request scenarios, the slow tail, the compression study, the BullMQ pair, the brokers, GraphQL, the SQL pair, the realistic endpoint, the Redis Stream, then SQS', () => {
    expect(SCENARIOS.map((s) => [s.id, s.itemsPerRequest])).toEqual([
      ['sim5', 1],
      ['sim25', 1],
      ['bull-local', 1],
      ['bull-proxy', 1],
      ['http-log', 1],
      ['mix', 5],
      ['sim5-tail', 1],
      ['compression', 2],
      ['bullmq-local', 1],
      ['bullmq-proxy', 1],
      ['rabbitmq', 1],
      ['nats', 1],
      ['graphql', 1],
      ['pg-local', 1],
      ['mysql-local', 1],
      ['realistic', 3],
      ['redis-stream', 1],
      ['sqs-local', 1],
    ]);
    expect(SCENARIOS.filter((s) => s.kind === 'variants')).toHaveLength(17);
    expect(scenarioInfo('compression').kind).toBe('encodings');
    expect(scenarioInfo('bull-proxy').needs).toEqual(['redis', 'redis-proxy']);
  });

  it('mirrors the Bull scenarios with BullMQ: same needs, one job per request, a queue of their own each', () => {
    expect(BULL_SCENARIOS).toEqual(['bull-local', 'bull-proxy']);
    expect(BULLMQ_SCENARIOS).toEqual(['bullmq-local', 'bullmq-proxy']);
    // the broker scenarios, each with the broker it needs (probed by the runner, skipped with the reason if absent)
    expect(scenarioInfo('rabbitmq').needs).toEqual(['rabbitmq']);
    expect(scenarioInfo('nats').needs).toEqual(['nats']);
    expect(variantsOf('rabbitmq')).toEqual(VARIANTS);
    // the GraphQL scenario has plain, blocking and deferred, driven at one query field each
    expect(variantsOf('graphql')).toEqual(['plain', 'blocking', 'deferred']);
    expect(routePath('graphql', 'deferred')).toBe('/graphql?query=%7Bdeferred%7D');
    expect(routePath('sim5', 'deferred')).toBe('/sim5/deferred');
    expect(routeHeaders('graphql')).toEqual({ 'apollo-require-preflight': 'true' });
    expect(routeHeaders('sim5')).toBeUndefined();
    expect(scenarioInfo('bullmq-local')).toMatchObject({ needs: ['redis'], kind: 'variants', itemsPerRequest: 1, alwaysItemsPerRequest: 0 });
    expect(scenarioInfo('bullmq-proxy')).toMatchObject({ needs: ['redis', 'redis-proxy'], kind: 'variants', itemsPerRequest: 1 });
    expect(scenarioInfo('bullmq-proxy').label).toContain('BullMQ');
    // a row per request into the app's database: a log record, so aborted requests write theirs too
    expect(scenarioInfo('pg-local')).toMatchObject({ needs: ['postgres'], kind: 'variants', itemsPerRequest: 1, alwaysItemsPerRequest: 1 });
    expect(scenarioInfo('mysql-local')).toMatchObject({ needs: ['mysql'], kind: 'variants', itemsPerRequest: 1, alwaysItemsPerRequest: 1 });
    expect(variantsOf('pg-local')).toEqual(VARIANTS);
    expect(benchTableName('mysql-local', 4242)).toBe('bench_mysql_local_4242');
    // the realistic endpoint: a POST with a JSON body and a bearer token; a job, a log and a metric, the log and metric `always`
    expect(scenarioInfo('realistic')).toMatchObject({ needs: ['redis', 'postgres'], itemsPerRequest: 3, alwaysItemsPerRequest: 2 });
    expect(variantsOf('realistic')).toEqual(['plain', 'blocking', 'article-tap', 'event-emitter', 'deferred', 'deferred-packed']);
    expect(routeRequest('realistic')).toMatchObject({ method: 'POST', headers: { 'content-type': 'application/json', authorization: expect.stringMatching(/^Bearer /) } });
    expect(JSON.parse(routeRequest('realistic').body!)).toMatchObject({ customerId: expect.any(String), shipping: expect.any(Object), lines: expect.any(Array) });
    expect(routeRequest('sim5')).toEqual({ method: 'GET', headers: undefined });
    expect(scenarioInfo('redis-stream')).toMatchObject({ needs: ['redis'], kind: 'variants', itemsPerRequest: 1, alwaysItemsPerRequest: 1 });
    expect(variantsOf('redis-stream')).toEqual(['plain', 'blocking', 'deferred', 'article-tap', 'event-emitter']);
    expect(STREAM_SCENARIOS).toEqual(['redis-stream']);
    expect(benchStreamName('redis-stream', 4242)).toBe('bench:redis-stream:4242');
    expect(scenarioInfo('sqs-local')).toMatchObject({ needs: [], kind: 'variants', itemsPerRequest: 1, alwaysItemsPerRequest: 1 });
    const names = [...BULL_SCENARIOS, ...BULLMQ_SCENARIOS].map(benchQueueName);
    expect(names).toEqual(['bench-bull-local', 'bench-bull-proxy', 'bench-bullmq-local', 'bench-bullmq-proxy']);
    // a job delivered when the response finished; none for an aborted request
    expect(expectedItems(scenarioInfo('bullmq-local'), 40, 10)).toBe(40);
  });

  it('expects every item of a finished request and only the always-items of an aborted one', () => {
    // mix: 1 job (success only) + 2 logs + 2 metrics (always)
    expect(expectedItems(scenarioInfo('mix'), 100, 0)).toBe(500);
    expect(expectedItems(scenarioInfo('mix'), 100, 3)).toBe(512);
    // a deferred callback runs on success only
    expect(expectedItems(scenarioInfo('sim5'), 40, 10)).toBe(40);
    expect(expectedItems(scenarioInfo('http-log'), 40, 10)).toBe(50);
  });

  it('runs every scenario six ways: plain, noop-interceptor, blocking, deferred and the two peers, which await the effect themselves', () => {
    expect(VARIANTS).toEqual(['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter']);
    expect(AWAITED_VARIANTS).toEqual(['blocking', 'article-tap', 'event-emitter']);
    expect(scenarioInfo('sim5-tail')).toMatchObject({ kind: 'variants', needs: [], alwaysItemsPerRequest: 0 });
  });
});

describe('variantsOf', () => {
  const SIX = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter'];
  const SEVEN = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-offload', 'article-tap', 'event-emitter'];
  const WITH_SPOOL = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-spool', 'article-tap', 'event-emitter'];
  const EIGHT = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-offload', 'deferred-spool', 'article-tap', 'event-emitter'];
  const WITH_PACKED = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-offload', 'deferred-packed', 'article-tap', 'event-emitter'];
  const NINE = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-offload', 'deferred-spool', 'deferred-packed', 'article-tap', 'event-emitter'];

  it('adds deferred-offload, after deferred, only where the sink can be offloaded: the Bull and BullMQ pairs and http-log', () => {
    expect(SCENARIOS.filter((s) => s.offload).map((s) => s.id)).toEqual(['bull-local', 'bull-proxy', 'http-log', 'bullmq-local', 'bullmq-proxy']);
    for (const id of ['bull-proxy', 'bullmq-proxy'] as const) expect(variantsOf(id)).toEqual(SEVEN);
    expect(variantsOf('bullmq-local')).toEqual(WITH_PACKED);
    for (const id of ['sim5', 'sim25', 'sim5-tail'] as const) expect(variantsOf(id)).toEqual(SIX);
    expect(variantsOf('compression')).toEqual([]);
    // a copy: the runner may not change the catalog
    variantsOf('sim5').pop();
    expect(VARIANTS).toHaveLength(6);
  });

  it('adds deferred-spool after deferred and deferred-offload in bull-local, http-log and mix only', () => {
    expect(SPOOL_VARIANT).toBe('deferred-spool');
    expect(SCENARIOS.filter((s) => s.spool).map((s) => s.id)).toEqual(['bull-local', 'http-log', 'mix']);
    expect(variantsOf('http-log')).toEqual(EIGHT);
    expect(variantsOf('bull-local')).toEqual(NINE);
    expect(variantsOf('mix')).toEqual(WITH_SPOOL);
    expect(variantsOf('graphql')).toEqual(['plain', 'blocking', 'deferred']);
    expect(spoolSinkName('bull-local')).toBe('bull-local-spool');
    // one group commit at the library's default syncIntervalMs (200 ms), and a margin
    expect(SPOOL_SETTLE_MS).toBeGreaterThan(200);
    expect(USAGE).toContain('plus deferred-spool (the sink behind the disk spool) in bull-local, http-log, mix;');
  });

  it('adds deferred-packed after the other twins in the local Bull and BullMQ scenarios (and realistic), its sink named after the scenario', () => {
    expect(PACKED_VARIANT).toBe('deferred-packed');
    expect(SCENARIOS.filter((s) => s.packed).map((s) => s.id)).toEqual(['bull-local', 'bullmq-local']);
    expect(variantsOf('bull-proxy')).not.toContain('deferred-packed');
    expect(packedSinkName('bullmq-local')).toBe('bullmq-local-packed');
    expect(USAGE).toContain('plus deferred-packed (the queue sink with packJobs) in bull-local, bullmq-local, realistic.');
  });

  it('counts deferred-offload, deferred-spool, deferred-packed and the handle routes like deferred (from stats()), and only the offloaded one has a worker', () => {
    expect(DEFERRED_VARIANTS).toEqual(['deferred', 'deferred-offload', 'deferred-spool', 'deferred-packed', 'deferred-handle', 'deferred-injected']);
    expect(WORKER_VARIANTS).toEqual(['deferred-offload']);
    // the same items per request as the deferred route
    expect(expectedItems(scenarioInfo('http-log'), 40, 10)).toBe(50);
  });

  it('names the offloaded twin sinks after their scenario, and says which scenarios have the variant', () => {
    expect(offloadSinkName('bull-proxy')).toBe('bull-proxy-offload');
    expect(offloadSinkName('http-log')).toBe('http-log-offload');
    expect(USAGE).toContain('plus deferred-offload (the sink in a worker thread) in bull-local, bull-proxy, http-log, bullmq-local, bullmq-proxy;');
  });
});

describe('variantOrder', () => {
  const all = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter', 'deferred-packed', 'deferred-offload'] as const;
  const follows = (order: readonly string[], before: string, after: string) => order.indexOf(after) === order.indexOf(before) + 1;

  for (const n of [5, 6, 7, 8]) {
    const variants = all.slice(0, n);
    const orders = Array.from({ length: 7 }, (_, r) => variantOrder(variants, r));

    it(`runs every one of ${n} variants once per repeat`, () => {
      for (const order of orders) expect([...order].sort()).toEqual([...variants].sort());
    });

    it(`starts each of ${n} repeats with a different one of ${n} variants`, () => {
      const firsts = Array.from({ length: n }, (_, r) => variantOrder(variants, r)[0]);
      expect(new Set(firsts).size).toBe(n);
    });

    it(`runs each neighbouring pair of ${n} variants in both orders within 7 repeats`, () => {
      for (let i = 0; i + 1 < n; i++) {
        expect(orders.some((order) => follows(order, variants[i], variants[i + 1]))).toBe(true);
        expect(orders.some((order) => follows(order, variants[i + 1], variants[i]))).toBe(true);
      }
    });
  }

  it('gives each of an even number of variants every position over as many repeats', () => {
    for (const n of [6, 8]) {
      const variants = all.slice(0, n);
      const orders = Array.from({ length: n }, (_, r) => variantOrder(variants, r));
      for (const variant of variants) expect(orders.map((order) => order.indexOf(variant)).sort()).toEqual(Array.from({ length: n }, (_, i) => i));
    }
  });
});
