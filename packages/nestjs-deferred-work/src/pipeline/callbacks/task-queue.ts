/**
 * A FIFO queue with O(1) `push`, `shift` and `unshift` (an array with a moving head, compacted
 * when the consumed part dominates): `Array.prototype.shift` moves every element, which matters
 * with thousands of queued callbacks.
 */
export class TaskQueue<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(value: T): void {
    this.items.push(value);
  }

  /** Puts `value` back at the front (a retry goes before newer work). */
  unshift(value: T): void {
    if (this.head > 0) this.items[--this.head] = value;
    else this.items.unshift(value);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const value = this.items[this.head];
    this.items[this.head++] = undefined as T; // let it be collected
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return value;
  }
}
