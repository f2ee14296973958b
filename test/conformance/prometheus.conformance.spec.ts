import { Registry } from 'prom-client';
import { PrometheusSink } from 'nestjs-deferred-work/prometheus';
import { describeSinkConformance } from '../support/sink-conformance';

/**
 * PrometheusSink on its own prom-client `Registry` (a fresh one per test): each item adds 1 to the
 * counter `conf_marks` under its own `mark` label, so the registry holds one series per mark and its
 * value is how many times that mark was written (a duplicate shows as 2).
 *
 * Left out: `poison`. A bad metric item (undeclared name or label, a value its type refuses, a
 * label set beyond `maxLabelSets`) is refused when it is deferred (`validate`, counted in
 * `stats().rejected`), so it never reaches a write; and prom-client's `inc` does not fail for an item
 * that passed those checks.
 * (The write checks the item again, so a handler that changes its tags object after deferring the
 * item does get it dead-lettered there; that is misuse, not a refusal by the destination, so it is
 * not used as the poison entry.)
 * Also left out: `outage` and `blackhole`: the registry is in-process, with no server to
 * stop and no link to cut.
 */
const METRIC = 'conf_marks';
let registry: Registry | undefined;

describeSinkConformance({
  name: 'PrometheusSink',
  open: () => {
    registry = new Registry();
    return {
      sink: new PrometheusSink({
        name: 'conf-prometheus',
        registry,
        metrics: [{ name: 'conf.marks', type: 'counter', help: 'Items written by the conformance suite', labelNames: ['mark'] }],
        maxLabelSets: 10_000,
      }),
    };
  },
  defer: (work, mark) => work.metric('conf.marks', 1, { mark }),
  received: async () => {
    const metric = registry!.getSingleMetric(METRIC);
    if (!metric) throw new Error(`the registry has no metric ${METRIC}`);
    const { values } = await metric.get();
    return values.flatMap(({ labels, value }) => Array.from({ length: value }, () => String(labels.mark)));
  },
});
