import { loadIoredis } from './redis-stream-clients';

/** What the sink uses of an ioredis `Cluster`: which nodes serve each hash slot (master first). */
export interface StreamCluster {
  isCluster: true;
  slots: ReadonlyArray<readonly string[] | undefined>;
  /** Reloads the slot map from the nodes (ioredis: once at a time; the outcome goes to `callback`). */
  refreshSlotsCache?(callback?: (error?: Error | null) => void): void;
}

/**
 * Whether a reply is a redirection (`MOVED`, `ASK`): the slot is served elsewhere. ioredis follows
 * one for a command alone, but not inside a pipeline whose other commands went through — the case of
 * a pipeline per node group whose slots moved apart.
 */
export function isRedirection(error: Error | null | undefined): boolean {
  const message = error?.message;
  return message !== undefined && (message.startsWith('MOVED ') || message.startsWith('ASK '));
}

/** Whether a client is an ioredis `Cluster` (its pipelines must hold keys that one node serves). */
export function isStreamCluster(client: unknown): client is StreamCluster {
  const c = client as Partial<StreamCluster> | null;
  return typeof client === 'object' && client !== null && c!.isCluster === true && Array.isArray(c!.slots);
}

/** The hash slot of a key, as ioredis computes it to route a command (CRC16 of the key or its `{hash tag}`, mod 16384). */
export type SlotOf = (key: string) => number;

/**
 * The slot function of the ioredis the app's `Cluster` comes from: `Command#getSlot()` (the
 * `cluster-key-slot` ioredis routes with), of the key as the client sends it (with the client's
 * `keyPrefix`), so the sink groups keys exactly as ioredis will check them.
 */
export async function loadSlotOf(label: string, keyPrefix?: string): Promise<SlotOf> {
  const { Command } = await loadIoredis(label);
  const options = keyPrefix ? { keyPrefix } : {};
  return (key) => new Command('xadd', [key], options).getSlot() ?? 0;
}

/** The `keyPrefix` a client was created with (ioredis puts it before every key it sends). */
export function keyPrefixOf(client: unknown): string | undefined {
  try {
    const prefix = (client as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
    return typeof prefix === 'string' && prefix !== '' ? prefix : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Groups stream keys by the nodes that serve their slot — what an ioredis `Cluster` pipeline must
 * hold ("all keys in the pipeline should belong to the same slots allocation group"). A slot whose
 * nodes are not known yet is a group of its own: ioredis routes (and redirects) it alone.
 */
export class SlotGroups {
  private readonly groups = new Map<string, string>();

  constructor(
    private readonly cluster: StreamCluster,
    private readonly slotOf: SlotOf,
  ) {}

  /** The group of the stream `key` (its nodes, `;`-separated, master first). */
  of(key: string): string {
    let group = this.groups.get(key);
    if (group === undefined) {
      const slot = this.slotOf(key);
      group = this.cluster.slots[slot]?.join(';') || `slot ${slot}`;
      this.groups.set(key, group);
    }
    return group;
  }
}
