import { RouteTimings } from './route-timing';

describe('RouteTimings', () => {
  it('keeps the average, maximum, p50 and p95 of handler and send times, and the items per request', () => {
    const timings = new RouteTimings();
    // 100 requests: handler 1..100 ms, send 0.5 ms but five at 200 ms; items 0..4
    for (let i = 1; i <= 100; i++) timings.record('GET /a', i, i > 95 ? 200 : 0.5, i % 5);
    const a = timings.snapshot()['GET /a']!;
    expect(a.count).toBe(100);
    expect(a.handlerMsAvg).toBe(50.5);
    expect(a.handlerMsMax).toBe(100);
    // within the histogram's resolution (buckets a quarter of an octave wide: ±12.5%)
    expect(a.handlerMsP50).toBeGreaterThan(50 / 1.13);
    expect(a.handlerMsP50).toBeLessThan(50 * 1.13);
    expect(a.handlerMsP95).toBeGreaterThan(95 / 1.13);
    expect(a.handlerMsP95).toBeLessThanOrEqual(100);
    expect(a.sendMsP50).toBeGreaterThan(0.5 / 1.13);
    expect(a.sendMsP50).toBeLessThan(0.5 * 1.13);
    expect(a.sendMsP95).toBeLessThan(0.5 * 1.13);
    expect(a.sendMsMax).toBe(200);
    expect(a.itemsAvg).toBe(2);
    expect(a.itemsMax).toBe(4);
  });

  it('never reports a quantile above the largest time; tiny and huge times stay in range', () => {
    const timings = new RouteTimings();
    timings.record('GET /b', 0.001, 0, 0);
    timings.record('GET /b', 0.002, 0, 0);
    timings.record('GET /c', 3_600_000, 10, 1);
    const { 'GET /b': b, 'GET /c': c } = timings.snapshot();
    expect(b!.handlerMsP95).toBeLessThanOrEqual(0.002);
    expect(c!.handlerMsP50).toBe(3_600_000); // past the last bucket: the largest seen
    expect(c!.handlerMsP95).toBeLessThanOrEqual(3_600_000);
    expect(c!.sendMsP50).toBeLessThanOrEqual(10);
    expect(c!.sendMsP50).toBeGreaterThan(9);
  });
});
