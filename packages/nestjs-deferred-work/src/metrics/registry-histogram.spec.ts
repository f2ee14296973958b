import { Histogram, Registry } from 'prom-client';
import { RegistryHistogram } from './registry-histogram';

describe('RegistryHistogram', () => {
  const buckets = [0.01, 0.1, 1];
  const values = [0.005, 0.01, 0.05, 0.5, 2, 0.1];

  it('exposes the same text as a prom-client Histogram fed the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new RegistryHistogram('t_seconds', 'A test.', buckets).register(ours);
    const reference = new Histogram({ name: 't_seconds', help: 'A test.', labelNames: ['sink', 'outcome'], buckets, registers: [theirs] });
    const a = histogram.child({ sink: 'a', outcome: 'success' });
    const b = histogram.child({ sink: 'b', outcome: 'failure' });
    for (const v of values) {
      a.observe(v);
      reference.observe({ sink: 'a', outcome: 'success' }, v);
    }
    b.observe(3);
    reference.observe({ sink: 'b', outcome: 'failure' }, 3);
    const lines = (text: string) => text.split('\n').filter(Boolean).sort();
    expect(lines(await ours.metrics())).toEqual(lines(await theirs.metrics()));
  });

  it('goes back to zero on registry.resetMetrics() and keeps counting in the same series', async () => {
    const registry = new Registry();
    const histogram = new RegistryHistogram('t_seconds', 'A test.', buckets).register(registry);
    const series = histogram.child({ sink: 'a' });
    series.observe(0.5);
    registry.resetMetrics();
    series.observe(0.05);
    const text = await registry.metrics();
    expect(text).toContain('t_seconds_count{sink="a"} 1');
    expect(text).toContain('t_seconds_bucket{le="0.01",sink="a"} 0');
    expect(text).toContain('t_seconds_bucket{le="0.1",sink="a"} 1');
  });

  it('ignores a value that is not a finite number', async () => {
    const registry = new Registry();
    const series = new RegistryHistogram('t_seconds', 'A test.', buckets).register(registry).child({ sink: 'a' });
    series.observe(Number.NaN);
    expect(await registry.metrics()).toContain('t_seconds_count{sink="a"} 0');
  });
});
