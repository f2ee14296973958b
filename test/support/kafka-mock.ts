import { type ChildProcess, spawn } from 'node:child_process';

/**
 * A private Kafka cluster for tests: librdkafka's built-in mock cluster, run by `kcat` (Debian's
 * `kcat` package) with `-X test.mock.num.brokers=<n>`. The mock brokers speak the Kafka protocol on
 * ephemeral ports of 127.0.0.1 (kcat prints them: "replaced with 127.0.0.1:…,…"); kcat is kept
 * running as an idle producer (its standard input open, nothing written). The cluster lives as long
 * as the kcat process: an outage is a pause (`pause()`: SIGSTOP — connections stay open, nothing
 * answers), then `resume()` (SIGCONT); a restart would be a new, empty cluster on other ports.
 *
 * What it covers: produce (acks = -1 through the partition leader), metadata, topic auto-creation,
 * consumer groups (join, sync, fetch, offset commits). What it does not: idempotent producers and
 * transactions (kafkajs's idempotent producer fails against it), real replication (followers and
 * the in-sync replica set are simulated), durability.
 *
 * The binary is `kcat` on the PATH, or `$KCAT_BIN`; if it cannot start, `start()` throws an error that
 * says how to provide it (tests fail, never skip).
 */
export class KafkaMock {
  /** The bootstrap servers, `127.0.0.1:<port>` per broker, once started. */
  brokers: string[] = [];
  private child: ChildProcess | undefined;
  private output = '';
  private paused = false;
  private readonly bin = process.env.KCAT_BIN || 'kcat';

  constructor(private readonly brokerCount = 3) {}

  /** Whether the cluster answers (not paused). */
  get running(): boolean {
    return this.child !== undefined && !this.paused;
  }

  async start(): Promise<void> {
    if (this.child) return;
    // -b is required by kcat and ignored by the mock cluster, which replaces it with its own brokers
    const args = ['-X', `test.mock.num.brokers=${this.brokerCount}`, '-b', '127.0.0.1:9', '-P', '-t', 'kafka-mock-idle'];
    const child = spawn(this.bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stdin?.on('error', () => undefined);
    try {
      this.brokers = await new Promise<string[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(this.howToFix(`printed no mock bootstrap servers within 5000 ms: ${this.tail()}`)), 5000);
        const done = (fn: () => void) => {
          clearTimeout(timer);
          child.stderr?.off('data', look);
          fn();
        };
        const look = () => {
          const found = /replaced with (\S+)/.exec(this.output);
          if (found) done(() => resolve(found[1].split(',')));
        };
        child.stderr?.on('data', look);
        child.once('error', (error: NodeJS.ErrnoException) => done(() => reject(this.howToFix(error.code === 'ENOENT' ? 'not found' : error.message))));
        child.once('exit', (code) => done(() => reject(this.howToFix(`exited at start (code ${code}): ${this.tail()}`))));
      });
    } catch (error) {
      child.kill('SIGKILL');
      this.child = undefined;
      throw error;
    }
  }

  /** Freezes the whole cluster (SIGSTOP): its sockets stay open and answer nothing until `resume()`. */
  async pause(): Promise<void> {
    if (!this.child || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** Lets the cluster run again (SIGCONT): it answers what it was sent while paused. */
  async resume(): Promise<void> {
    if (!this.child || !this.paused) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** Ends the cluster (and everything it held). */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    this.brokers = [];
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL'); // delivered to a stopped process too
    this.paused = false;
    await exited;
  }

  private tail(): string {
    return this.output.trim().slice(-300);
  }

  private howToFix(problem: string): Error {
    return new Error(
      `Cannot start librdkafka's mock Kafka cluster for the tests: "${this.bin}" ${problem}. ` +
        'Install kcat (Debian/Ubuntu: apt-get install kcat; .ci/run does it) or point KCAT_BIN at the binary.',
    );
  }
}
