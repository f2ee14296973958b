import { MemorySink } from 'nestjs-deferred-work';
import { describeSinkConformance } from '../support/sink-conformance';

/**
 * MemorySink: its "server" is the sink itself, read back through `items`. Named 'conf-memory' so it
 * is not the `MemorySink` named 'memory' the suite adds after it.
 *
 * Left out: `poison` (MemorySink keeps every item it is given: nothing accepted can be refused at
 * write time), `outage` and `blackhole` (in-process: no server to stop, no link to cut).
 */
const NAME = 'conf-memory';
let sink: MemorySink | undefined;

describeSinkConformance({
  name: 'MemorySink',
  open: () => {
    sink = new MemorySink({ name: NAME });
    return { sink };
  },
  defer: (work, mark) => work.job('conf', 'item', { mark }, { sink: NAME }),
  received: async () => sink!.items.map((item) => (item.kind === 'job' ? String((item.data as { mark: string }).mark) : `(a ${item.kind} item)`)),
});
