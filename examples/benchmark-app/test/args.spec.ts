import { AWAITED_VARIANTS, DEFAULT_OPTIONS, expectedItems, parseArgs, SCENARIOS, scenarioInfo, UsageError, VARIANTS } from '../src/bench/args';

describe('parseArgs', () => {
  it('defaults to every scenario on both adapters, with short bounded runs', () => {
    const options = parseArgs([]);
    expect(options.scenarios).toEqual(['sim5', 'sim25', 'bull-local', 'bull-proxy', 'http-log', 'mix', 'sim5-tail', 'compression']);
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
  });

  it('takes one adapter or both', () => {
    expect(parseArgs(['--adapter', 'fastify']).adapters).toEqual(['fastify']);
    expect(parseArgs(['--adapter', 'express']).adapters).toEqual(['express']);
    expect(parseArgs(['--adapter', 'both']).adapters).toEqual(['express', 'fastify']);
  });

  it('ignores a lone "--" (pnpm bench -- --duration 2)', () => {
    expect(parseArgs(['--', '--duration', '4']).duration).toBe(4);
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
    [['--scenarios', 'redis'], 'Unknown scenario "redis". Use ids (sim5, sim25, bull-local, bull-proxy, http-log, mix, sim5-tail, compression) or numbers 1-8'],
    [['--scenarios', '9'], 'Unknown scenario "9"'],
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
  it('has the six scenarios of issue 4 and the slow tail of issue 9 with their items per request, then the compression study', () => {
    expect(SCENARIOS.map((s) => [s.id, s.itemsPerRequest])).toEqual([
      ['sim5', 1],
      ['sim25', 1],
      ['bull-local', 1],
      ['bull-proxy', 1],
      ['http-log', 1],
      ['mix', 5],
      ['sim5-tail', 1],
      ['compression', 2],
    ]);
    expect(SCENARIOS.filter((s) => s.kind === 'variants')).toHaveLength(7);
    expect(scenarioInfo('compression').kind).toBe('encodings');
    expect(scenarioInfo('bull-proxy').needs).toEqual(['redis', 'redis-proxy']);
  });

  it('expects every item of a finished request and only the always-items of an aborted one', () => {
    // mix: 1 job (success only) + 2 logs + 2 metrics (always)
    expect(expectedItems(scenarioInfo('mix'), 100, 0)).toBe(500);
    expect(expectedItems(scenarioInfo('mix'), 100, 3)).toBe(512);
    // a deferred callback runs on success only
    expect(expectedItems(scenarioInfo('sim5'), 40, 10)).toBe(40);
    expect(expectedItems(scenarioInfo('http-log'), 40, 10)).toBe(50);
  });

  it('runs every scenario six ways: the four of issue 4 and the two peers, which await the effect themselves', () => {
    expect(VARIANTS).toEqual(['plain', 'noop-interceptor', 'blocking', 'deferred', 'article-tap', 'event-emitter']);
    expect(AWAITED_VARIANTS).toEqual(['blocking', 'article-tap', 'event-emitter']);
    expect(scenarioInfo('sim5-tail')).toMatchObject({ kind: 'variants', needs: [], alwaysItemsPerRequest: 0 });
  });
});
