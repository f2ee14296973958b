// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dispatcher.ts
var import_common = require("@nestjs/common");

// ../../work/main/packages/nestjs-deferred-work/src/core/timers.ts
var MAX_TIMER_MS = 2147483647;
function timeoutOr(ms, fallback) {
  return ms !== void 0 && Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_TIMER_MS) : fallback;
}

// ../../work/main/packages/nestjs-deferred-work/src/core/error-message.ts
function errorMessage(error) {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/core/settle.ts
function settleBefore(promise, arm) {
  return new Promise((resolve6) => {
    const cancel = arm(() => resolve6({ status: "pending" }));
    promise.then(
      (value) => {
        cancel();
        resolve6({ status: "fulfilled", value });
      },
      (reason) => {
        cancel();
        resolve6({ status: "rejected", reason });
      }
    );
  });
}
function settleThisTurn(promise) {
  return settleBefore(promise, (expire) => {
    const immediate = setImmediate(expire);
    return () => clearImmediate(immediate);
  });
}
function settleWithin(promise, ms, keepAlive = false) {
  if (ms <= 0) return Promise.resolve({ status: "pending" });
  return settleBefore(promise, (expire) => {
    const timer = setTimeout(expire, Math.min(ms, MAX_TIMER_MS));
    if (!keepAlive) timer.unref();
    return () => clearTimeout(timer);
  });
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/dead-letter-record.ts
function recordId(itemId, sink2) {
  return `${itemId ?? "unknown"}:${sink2}`;
}
function recordOf(letter, history) {
  const lastError = letter.error === void 0 ? void 0 : { message: letter.error, ...letter.code !== void 0 ? { code: letter.code } : {}, at: letter.at };
  return {
    ...letter,
    id: recordId(letter.item.id, letter.sink),
    firstError: history?.firstError ?? letter.firstError ?? lastError,
    lastError,
    firstAt: history?.firstAt ?? letter.at,
    redrives: history?.redrives ?? 0
  };
}
function serializeRecord(record) {
  return JSON.stringify(record);
}
function recordBytes(record) {
  return Buffer.byteLength(serializeRecord(record), "utf8");
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/redrive.ts
var import_promises = require("node:timers/promises");

// ../../work/main/packages/nestjs-deferred-work/src/core/errors/redrive-in-progress.error.ts
var RedriveInProgressError = class extends Error {
  constructor(startedAt, done, total) {
    super(
      `A redrive of dead letters is already running (started ${new Date(startedAt).toISOString()}, ${done} of ${total} handed back). Wait for its promise to resolve, then redrive again.`
    );
    this.startedAt = startedAt;
  }
  startedAt;
  name = "RedriveInProgressError";
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/redrive.ts
var HISTORY_LIMIT = 1e4;
var PAGE = 1e3;
var Redrive = class {
  constructor(store, processors, perSecond) {
    this.store = store;
    this.processors = processors;
    this.perSecond = perSecond;
  }
  store;
  processors;
  perSecond;
  running;
  /** What a redriven item's next record keeps, by record id (bounded; oldest forgotten first). */
  history = /* @__PURE__ */ new Map();
  /** The history of a record id being redriven, taken (once). */
  take(id) {
    const history = this.history.get(id);
    if (history) this.history.delete(id);
    return history;
  }
  async run(selector, options = {}) {
    if (this.running) throw new RedriveInProgressError(this.running.startedAt, this.running.done, this.running.total);
    const state = { startedAt: Date.now(), done: 0, total: 0 };
    this.running = state;
    try {
      const dryRun = options.dryRun === true;
      const skipped = [];
      const records = await this.select(selector, skipped);
      const ready = [];
      for (const record of records) {
        const why = this.cannot(record);
        if (why) skipped.push({ id: record.id, reason: why });
        else ready.push(record);
      }
      state.total = ready.length;
      const result = { dryRun, matched: records.length, redriven: dryRun ? ready.length : 0, skipped };
      if (dryRun) return result;
      const perSecond = options.perSecond ?? this.perSecond;
      const gapMs = perSecond > 0 ? 1e3 / perSecond : 0;
      let next2 = Date.now();
      for (const record of ready) {
        const wait = next2 - Date.now();
        if (wait > 0) await (0, import_promises.setTimeout)(wait);
        next2 = Math.max(next2, Date.now() - 1e3) + gapMs;
        const why = this.cannot(record) ?? (this.processors.get(record.sink).hasRoom ? void 0 : `sink "${record.sink}" has no room in its queue`);
        if (why) {
          skipped.push({ id: record.id, reason: why });
          continue;
        }
        if (await this.store.remove([record.id]) === 0) {
          skipped.push({ id: record.id, reason: "no longer in the store (discarded or redriven meanwhile)" });
          continue;
        }
        this.remember(record);
        this.processors.get(record.sink).redrive(record.item);
        result.redriven++;
        state.done++;
      }
      return result;
    } finally {
      this.running = void 0;
    }
  }
  async select(selector, skipped) {
    if ("ids" in selector) {
      const records2 = [];
      for (const id of new Set(selector.ids)) {
        const record = await this.store.get(id);
        if (record) records2.push(record);
        else skipped.push({ id, reason: "not found" });
      }
      return records2;
    }
    const records = [];
    let after;
    do {
      const page = await this.store.list({ ...selector.filter, limit: PAGE, after });
      records.push(...page.records);
      after = page.next;
    } while (after !== void 0);
    return records;
  }
  /** Why a record cannot be redriven now, if it cannot. */
  cannot(record) {
    if (record.item.kind === "callback") return "a run(fn) callback cannot be redriven (its function is not kept)";
    const processor = this.processors.get(record.sink);
    if (!processor) return `no sink is named "${record.sink}" any more`;
    if (processor.closed) return `sink "${record.sink}" has shut down`;
    return void 0;
  }
  remember(record) {
    if (this.history.size >= HISTORY_LIMIT) this.history.delete(this.history.keys().next().value);
    this.history.set(record.id, { firstError: record.firstError, firstAt: record.firstAt, redrives: record.redrives + 1 });
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/dead-letter-desk.ts
var STORE_FLUSH_MS = 5e3;
var DeadLetterDesk = class {
  constructor(options, warnings, processors) {
    this.options = options;
    this.warnings = warnings;
    this.processors = processors;
    const store = options.deadLetterStore;
    if (!store) return;
    const opened = store.open?.();
    if (opened instanceof Promise) this.opening = opened.catch((error) => this.storeFailed("open", error));
    this.store = store;
    this.redrive = new Redrive(store, processors, options.redrivePerSecond);
  }
  options;
  warnings;
  processors;
  ring = [];
  /** The store, once opened (an async `open()` is waited for); `undefined` after close. */
  store;
  opening;
  /** The store's adds under way (an async store): `close()` waits for them, within `STORE_FLUSH_MS`. */
  adding = /* @__PURE__ */ new Set();
  redrive;
  /** The store dead letters are kept in, for the API (`undefined` with `store: false`). */
  get kept() {
    return this.options.deadLetterStore;
  }
  /** Waits for an async store's `open()`. */
  ready() {
    return this.opening ?? Promise.resolve();
  }
  /** Closes the store (at shutdown, after the last dead letter). */
  async close() {
    const store = this.store;
    this.store = void 0;
    if (!store) return;
    await this.flushed();
    if (!store.close) return;
    await this.ready();
    try {
      await store.close();
    } catch (error) {
      this.storeFailed("close", error);
    }
  }
  /** Recent dead letters, oldest first. */
  recent() {
    return [...this.ring];
  }
  add(letters) {
    if (letters.length === 0) return;
    const capacity = this.options.deadLetterCapacity;
    if (capacity > 0) {
      for (const letter of letters) this.ring.push(letter);
      if (this.ring.length > capacity) this.ring.splice(0, this.ring.length - capacity);
    }
    const first = letters[0];
    if (first.reason !== "closed") this.warn(letters);
    this.keep(letters);
    this.forward(letters);
  }
  /** Into the store, with what a redriven item's earlier record had (its first error, its redrives). */
  keep(letters) {
    const store = this.store;
    if (!store) return;
    const records = letters.map((letter) => recordOf(letter, this.redrive?.take(recordId(letter.item.id, letter.sink))));
    const add = () => store.add(records);
    try {
      const added = this.opening ? this.opening.then(add) : add();
      if (added instanceof Promise) {
        const settled = added.catch((error) => this.storeFailed("add", error));
        this.adding.add(settled);
        const done = () => this.adding.delete(settled);
        void settled.then(done, done);
      }
    } catch (error) {
      this.storeFailed("add", error);
    }
  }
  /**
   * Waits for the store's adds under way — dead letters of the drain's last moments, buried at the
   * shutdown deadline — so that `app.close()` resolves with them stored, not in flight on a client the
   * app may close or a process about to exit. At most `STORE_FLUSH_MS`; past that, says how many.
   */
  async flushed() {
    if (this.adding.size === 0) return;
    const pending = [...this.adding];
    const done = await settleWithin(Promise.all(pending), STORE_FLUSH_MS, true);
    if (done.status === "pending") {
      this.warnings.warn(
        "dead-letter-store:flush",
        `Dead-letter store ${this.options.deadLetterStore?.description ?? ""} had not stored ${pending.length} write(s) of dead letters within ${STORE_FLUSH_MS} ms after the drain; they may be in DeferredWork.deadLetters() only.`
      );
    }
  }
  storeFailed(what, error) {
    this.warnings.warn(
      `dead-letter-store:${what}`,
      `Dead-letter store ${this.options.deadLetterStore?.description ?? ""} failed to ${what}: ${errorMessage(error)}; the letters stay in DeferredWork.deadLetters().`
    );
  }
  warn(letters) {
    const first = letters[0];
    this.warnings.warn(
      `dead:${first.sink}`,
      `${letters.length} item(s) for sink "${first.sink}" dead-lettered (${first.reason}${first.error ? `: ${first.error}` : ""}). See DeferredWork.deadLetters() and stats().`
    );
  }
  forward(letters) {
    const target = this.options.deadLetter;
    if (target === void 0) return;
    if (typeof target === "string") {
      const fallback = this.processors.get(target);
      for (const letter of letters) {
        if (letter.sink === target || letter.item.kind === "callback") continue;
        try {
          fallback.sink.validate?.(letter.item);
        } catch (error) {
          this.warnings.warn("dead-letter-forward", `A dead letter was not forwarded to sink "${target}": ${errorMessage(error)}`);
          continue;
        }
        fallback.enqueue(letter.item);
      }
      fallback.spool?.writeNow();
      return;
    }
    Promise.resolve().then(() => target(letters)).catch(
      (error) => this.warnings.warn(
        "dead-letter-handler",
        `Dead-letter handler failed: ${error instanceof Error ? error.message : String(error)}; the letters stay in DeferredWork.deadLetters().`
      )
    );
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/core/errors/deferred-item-rejected.error.ts
var DeferredItemRejectedError = class extends Error {
  constructor(item, problem, fix) {
    super(`DeferredWork rejected ${item}: ${problem}. ${fix}`);
    this.item = item;
  }
  item;
  name = "DeferredItemRejectedError";
};

// ../../work/main/packages/nestjs-deferred-work/src/core/items/item-kinds.ts
var DEFERRED_KINDS = Object.freeze(["job", "log", "metric", "callback"]);
var SINK_KINDS = Object.freeze(["job", "log", "metric"]);
var RUN_WHENS = Object.freeze(["always", "success", "failure"]);
var WHEN_DEFAULTS = Object.freeze({
  job: "success",
  callback: "success",
  log: "always",
  metric: "always"
});
function isRunWhen(value) {
  return value === "always" || value === "success" || value === "failure";
}
function isSinkKind(value) {
  return value === "job" || value === "log" || value === "metric";
}
function isDeferredKind(value) {
  return isSinkKind(value) || value === "callback";
}

// ../../work/main/packages/nestjs-deferred-work/src/core/items/item-validator.ts
var LEVELS = /* @__PURE__ */ new Set(["fatal", "error", "warn", "log", "info", "debug", "verbose"]);
function describeItem(item) {
  switch (item.kind) {
    case "job":
      return `job "${String(item.name)}" on queue "${String(item.queue)}"`;
    case "log":
      return `log record "${String(item.message).slice(0, 60)}"`;
    case "metric":
      return `metric "${String(item.name)}"`;
    default:
      return "callback";
  }
}
var QUICK_NODES = 64;
var QUICK_DEPTH = 6;
var nodesLeft = 0;
function boundOf(v, depth) {
  if (--nodesLeft < 0) return -1;
  switch (typeof v) {
    case "string":
      return 2 + 6 * v.length;
    case "number":
      return 24;
    case "boolean":
      return 5;
    case "undefined":
    case "function":
    case "symbol":
      return 4;
    // omitted in objects, null in arrays
    case "bigint":
      return -1;
  }
  if (v === null) return 4;
  if (depth >= QUICK_DEPTH || typeof v.toJSON === "function") return -1;
  let size = 2;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const s = boundOf(v[i], depth + 1);
      if (s < 0) return -1;
      size += s + 1;
    }
    return size;
  }
  for (const key in v) {
    if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
    const s = boundOf(v[key], depth + 1);
    if (s < 0) return -1;
    size += 6 * key.length + 4 + s;
  }
  return size;
}
function quickSizeBound(value) {
  const outer = nodesLeft;
  nodesLeft = QUICK_NODES;
  try {
    return boundOf(value, 0);
  } catch {
    return -1;
  } finally {
    nodesLeft = outer;
  }
}
function payloadBytes(item, what, payload, maxItemBytes) {
  if (payload === void 0) return 0;
  const bound = quickSizeBound(payload);
  if (bound >= 0 && bound * 2 <= maxItemBytes) return bound;
  let json;
  try {
    json = JSON.stringify(payload);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new DeferredItemRejectedError(
      describeItem(item),
      `its ${what} cannot be serialised to JSON (${reason})`,
      "Pass plain data: no circular references, no BigInt (convert it to a string), no class instances with cycles"
    );
  }
  if (json === void 0) return 0;
  return json.length * 3 <= maxItemBytes ? json.length : Buffer.byteLength(json);
}
function validateItem(item, maxItemBytes) {
  if (!isRunWhen(item.when)) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `"${String(item.when)}" is not a condition`,
      'Pass { when: "success" | "failure" | "always" }, or leave it out for the default'
    );
  }
  let bytes = 0;
  switch (item.kind) {
    case "job":
      if (typeof item.queue !== "string" || item.queue === "" || typeof item.name !== "string") {
        throw new DeferredItemRejectedError(
          describeItem(item),
          "a job needs a non-empty queue name and a job name (strings)",
          'Call job("queue", "name", data)'
        );
      }
      bytes = payloadBytes(item, "data", item.data, maxItemBytes) + payloadBytes(item, "options", item.opts, maxItemBytes);
      break;
    case "log":
      if (!LEVELS.has(item.level) || typeof item.message !== "string") {
        throw new DeferredItemRejectedError(
          describeItem(item),
          `a log record needs a level (${[...LEVELS].join(", ")}) and a string message`,
          'Call log("info", "message", { ...fields })'
        );
      }
      bytes = payloadBytes(item, "fields", item.fields, maxItemBytes);
      break;
    case "metric":
      if (typeof item.name !== "string" || item.name === "" || typeof item.value !== "number" || !Number.isFinite(item.value)) {
        throw new DeferredItemRejectedError(
          describeItem(item),
          `a metric needs a non-empty name and a finite number value (got ${String(item.value)})`,
          'Call metric("name", 42, { tag: "value" })'
        );
      }
      bytes = payloadBytes(item, "tags", item.tags, maxItemBytes);
      break;
    case "callback":
      if (typeof item.fn !== "function") {
        throw new DeferredItemRejectedError("callback", "run() needs a function", "Call run(async (signal) => { ... })");
      }
      return;
    default:
      throw new DeferredItemRejectedError(
        `item of kind "${String(item.kind)}"`,
        "unknown kind",
        "Use job(), log(), metric() or run()"
      );
  }
  if (bytes > maxItemBytes) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `its payload is ${bytes} bytes, over maxItemBytes (${maxItemBytes})`,
      "Store large data elsewhere and defer a reference to it, or raise maxItemBytes"
    );
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/core/items/item-id.ts
var import_node_crypto = require("node:crypto");
var prefix = "";
var next = 0;
var COUNTER_LIMIT = 2 ** 48;
var LOW = Array.from({ length: 4096 }, (_, i) => i.toString(16).padStart(3, "0"));
var block = "";
function newPrefix() {
  const hex = (0, import_node_crypto.randomBytes)(10).toString("hex");
  const variant = (parseInt(hex[12], 16) & 3 | 8).toString(16);
  return `dw-${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(16, 19)}-`;
}
function newItemId() {
  if (next === 0 || next >= COUNTER_LIMIT) {
    prefix = newPrefix();
    next = 0;
  }
  const n = next++;
  const low = n & 4095;
  if (low === 0) block = prefix + Math.floor(n / 4096).toString(16).padStart(9, "0");
  return block + LOW[low];
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/warnings/rate-limited-logger.ts
var MAX_KEYS = 512;
var RateLimitedLogger = class {
  constructor(logger, intervalMs = 3e4) {
    this.logger = logger;
    this.intervalMs = intervalMs;
  }
  logger;
  intervalMs;
  last = /* @__PURE__ */ new Map();
  warn(key, message) {
    const now = Date.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    const suffix = seen && seen.suppressed > 0 ? ` (${seen.suppressed} similar warnings held back)` : "";
    this.allow(key);
    this.logger.warn(message + suffix);
  }
  /** Whether `key` may act now (at most `times` per interval); counts the call as acting when it may. */
  allow(key, times = 1) {
    const now = Date.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      if (seen.count >= times) return false;
      seen.count++;
      return true;
    }
    this.last.delete(key);
    this.last.set(key, { at: now, suppressed: 0, count: 1 });
    if (this.last.size > MAX_KEYS) this.last.delete(this.last.keys().next().value);
    return true;
  }
  /** Forgets every key starting with `prefix`: their next warning is logged at once. */
  forget(prefix2) {
    for (const key of [...this.last.keys()]) if (key.startsWith(prefix2)) this.last.delete(key);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/item-watch.ts
var ItemWatch = class {
  watchers = /* @__PURE__ */ new WeakMap();
  /** Items watched now; call sites skip the lookup while it is 0. */
  watching = 0;
  /** Calls `onOutcome` for each outcome of `item` (one per sink it is routed to) until `unwatch`. */
  watch(item, onOutcome) {
    if (!this.watchers.has(item)) this.watching++;
    this.watchers.set(item, onOutcome);
  }
  unwatch(item) {
    if (this.watchers.delete(item)) this.watching--;
  }
  settled(item, outcome) {
    this.watchers.get(item)?.(outcome);
  }
};
var itemWatch = new ItemWatch();

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/sleep.ts
function sleepUnlessAborted(ms, signal) {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve6) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve6();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener("abort", done, { once: true });
  });
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/guarded-write.ts
var ABORT_GRACE_MS = 1e3;
var noop = () => void 0;
var WriteTimeoutError = class extends Error {
  name = "WriteTimeoutError";
};
async function guardedWrite(sink2, items2, attempt, timeoutMs, hardStop, abandoned) {
  let controller;
  let abortedWith;
  const context = {
    attempt,
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (abortedWith) controller.abort(abortedWith.reason);
      }
      return controller.signal;
    }
  };
  let settle;
  const raced = new Promise((resolve6, reject) => settle = { resolve: resolve6, reject });
  const abort = (reason) => {
    if (abortedWith) return;
    const why = reason ?? new DOMException("This operation was aborted", "AbortError");
    abortedWith = { reason: why };
    controller?.abort(why);
    queueMicrotask(() => settle.reject(why));
  };
  const timeout = setTimeout(() => abort(new WriteTimeoutError(`write timed out after ${timeoutMs} ms`)), timeoutMs);
  timeout.unref();
  const stopWatching = hardStop.watch(abort);
  let write;
  try {
    write = Promise.resolve(sink2.write(items2, context));
  } catch (error) {
    write = Promise.reject(error);
  }
  write.then(settle.resolve, settle.reject);
  try {
    return await raced;
  } catch (error) {
    if (!abortedWith || error !== abortedWith.reason) throw error;
    const late = hardStop.signal.aborted ? await settleThisTurn(write) : await settleWithin(write, Math.min(ABORT_GRACE_MS, timeoutMs));
    if (late.status === "fulfilled") return late.value;
    if (late.status === "pending") abandoned?.(write.then(noop, noop));
    throw late.status === "rejected" ? late.reason : error;
  } finally {
    clearTimeout(timeout);
    stopWatching();
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/hard-stop.ts
var HardStop = class {
  controller = new AbortController();
  watchers = /* @__PURE__ */ new Set();
  /** Aborted, with the stop's reason, once `abort` is called. */
  get signal() {
    return this.controller.signal;
  }
  /**
   * Calls `onStop(reason)` when the stop comes (not if it already has, as with a listener added then).
   * Returns the function that stops watching.
   */
  watch(onStop) {
    this.watchers.add(onStop);
    return () => this.watchers.delete(onStop);
  }
  /** Stops: aborts `signal`, then calls every watcher. Once; later calls do nothing. */
  abort(reason) {
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    for (const onStop of this.watchers) onStop(this.controller.signal.reason);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/sink-counters.ts
var SinkCounters = class {
  accepted = 0;
  delivered = 0;
  dropped = 0;
  deadLettered = 0;
  retried = 0;
  duplicates = 0;
  writes = 0;
  failedWrites = 0;
  lastError;
  lastErrorAt;
  lastErrorCode;
  lastWriteMs;
  lastDropAt;
  lastDeadLetterAt;
  redriven = 0;
  /** `deadLettered` by reason (the reasons seen). */
  deadLetteredByReason = {};
  /** Since when every write failed (epoch ms), until one goes through completely. */
  failingSince;
  /** When the write in flight started (epoch ms), if one is. */
  writeStartedAt;
  /** When a write last started or ended (epoch ms). */
  lastProgressAt;
  /** Writes given up on that ignored their abort signal and have not settled: their start (epoch ms). */
  unsettled = /* @__PURE__ */ new Set();
  /**
   * The same counts by item kind, for the kinds seen. Their sums equal the totals, except for items a
   * spool replays from a previous process (counted by kind once read back from disk) and spooled items
   * that could not be read back.
   */
  byKind = /* @__PURE__ */ new Map();
  /** The counts of one kind (created at its first item). */
  kind(kind) {
    let counts = this.byKind.get(kind);
    if (!counts) this.byKind.set(kind, counts = { accepted: 0, delivered: 0, dropped: 0, deadLettered: 0, retried: 0 });
    return counts;
  }
  drop(kind) {
    this.kind(kind).dropped++;
    this.dropped++;
    this.lastDropAt = Date.now();
  }
  writeStarted() {
    this.writes++;
    this.writeStartedAt = this.lastProgressAt = Date.now();
  }
  writeEnded() {
    this.writeStartedAt = void 0;
    this.lastProgressAt = Date.now();
  }
  /**
   * The write in flight was given up on after its timeout and abort grace and is still pending;
   * counted (from the write's start) until `settled` settles.
   */
  abandoned(settled) {
    const write = { since: this.writeStartedAt ?? Date.now() };
    this.unsettled.add(write);
    void settled.then(() => this.unsettled.delete(write));
  }
  /** A write went through completely: the sink is not failing any more. */
  succeeded() {
    this.failingSince = void 0;
  }
  failedWrite(summary, code) {
    this.failedWrites++;
    this.lastError = summary;
    this.lastErrorAt = Date.now();
    this.failingSince ??= this.lastErrorAt;
    this.lastErrorCode = code;
  }
  /** Counts `count` dead letters of `reason`; returns the time to stamp them with. */
  buried(count, reason) {
    const at = Date.now();
    this.deadLettered += count;
    this.deadLetteredByReason[reason] = (this.deadLetteredByReason[reason] ?? 0) + count;
    this.lastDeadLetterAt = at;
    return at;
  }
  unsettledStats() {
    if (this.unsettled.size === 0) return {};
    let since = Infinity;
    for (const write of this.unsettled) since = Math.min(since, write.since);
    return { unsettledWrites: this.unsettled.size, unsettledWriteSince: Math.round(since) };
  }
  snapshot(pending, queueDepth, inFlight) {
    return {
      accepted: this.accepted,
      delivered: this.delivered,
      pending,
      dropped: this.dropped,
      deadLettered: this.deadLettered,
      retried: this.retried,
      duplicates: this.duplicates,
      queueDepth,
      inFlight,
      writes: this.writes,
      failedWrites: this.failedWrites,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastErrorCode: this.lastErrorCode,
      lastWriteMs: this.lastWriteMs,
      lastDropAt: this.lastDropAt,
      lastDeadLetterAt: this.lastDeadLetterAt,
      deadLetteredByReason: { ...this.deadLetteredByReason },
      redriven: this.redriven,
      failingSince: this.failingSince,
      writeInFlightSince: this.writeStartedAt,
      ...this.unsettledStats(),
      lastProgressAt: this.lastProgressAt
    };
  }
};
function kindCountsOf(counters) {
  const out = {};
  for (const [kind, counts] of counters.byKind) out[kind] = { ...counts };
  return out;
}

// ../../work/main/packages/nestjs-deferred-work/src/core/errors/sink-write.error.ts
var SinkWriteError = class extends Error {
  name = "SinkWriteError";
  /** `false`: do not retry (dead-lettered at once). Default `true`. */
  retryable;
  /** Wait at least this long before retrying, in ms (from `Retry-After`, for example). Default: the dispatcher's backoff. */
  retryAfterMs;
  /**
   * The server's own code for the failure (a SQLSTATE such as `23502`, a MySQL errno, a Redis reply
   * prefix such as `WRONGTYPE`, an AWS error code, an HTTP status). Kept on the dead letter and in
   * `stats().sinks[name].lastErrorCode`. Default: none.
   */
  code;
  constructor(message, options = {}) {
    super(message, options.cause === void 0 ? void 0 : { cause: options.cause });
    this.retryable = options.retryable ?? true;
    this.retryAfterMs = options.retryAfterMs;
    if (options.code !== void 0) this.code = String(options.code);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/write-result.ts
var NONE = Object.freeze({ failures: [], duplicates: 0 });
function outcomeOf(result, entries, sinkName) {
  const written = result;
  const failed = written?.failed;
  const duplicates = written?.duplicates;
  if ((failed === void 0 || failed === null) && (duplicates === void 0 || duplicates === null)) return NONE;
  if (failed !== void 0 && failed !== null && !Array.isArray(failed)) {
    throw new Error(`sink "${sinkName}" returned a malformed result ("failed" must be an array of { index, error })`);
  }
  if (duplicates !== void 0 && duplicates !== null && !Array.isArray(duplicates)) {
    throw new Error(`sink "${sinkName}" returned a malformed result ("duplicates" must be an array of indexes)`);
  }
  const seen = /* @__PURE__ */ new Set();
  const failures = [];
  for (const failure of failed ?? []) {
    const index = checkIndex(failure?.index, entries.length, sinkName);
    if (seen.has(index)) continue;
    seen.add(index);
    failures.push(failureOf(entries[index], failure));
  }
  let skipped = 0;
  for (const index of duplicates ?? []) {
    if (!seen.has(checkIndex(index, entries.length, sinkName))) skipped++;
  }
  return { failures, duplicates: skipped };
}
function failureOf(entry2, failure) {
  const error = failure.error;
  const typed = error instanceof SinkWriteError ? error : void 0;
  const retryAfterMs = failure.retryAfterMs ?? typed?.retryAfterMs;
  const code = failure.code ?? typed?.code;
  const out = { entry: entry2, retryable: (failure.retryable ?? typed?.retryable) !== false, message: errorMessage(error) };
  if (retryAfterMs !== void 0) out.retryAfterMs = retryAfterMs;
  if (code !== void 0) out.code = String(code);
  return out;
}
function checkIndex(index, length, sinkName) {
  if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= length) {
    throw new Error(`sink "${sinkName}" reported a failure with an invalid index (${String(index)})`);
  }
  return index;
}
function retryAfterOf(failures, whole) {
  let wait = whole;
  for (const { retryAfterMs } of failures) {
    if (retryAfterMs !== void 0 && (wait === void 0 || retryAfterMs > wait)) wait = retryAfterMs;
  }
  return wait;
}
function failureSummary(failures, total) {
  const first = failures[0];
  const text = first.code !== void 0 && !first.message.includes(first.code) ? `${first.message} (${first.code})` : first.message;
  return failures.length === total ? text : `${failures.length} of ${total} items failed: ${text}`;
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/processor-base.ts
var ProcessorBase = class {
  constructor(sink2, options, hooks, spool) {
    this.sink = sink2;
    this.options = options;
    this.hooks = hooks;
    this.spool = spool;
  }
  sink;
  options;
  hooks;
  spool;
  counters = new SinkCounters();
  /** Aborted when shutdown's deadline passes: cuts retry waits and in-flight writes short. */
  hardStop = new HardStop();
  /** Shutdown finished: new items are dead-lettered (`closed`) at once. */
  closedForGood = false;
  /** Why it closed, when not at the application's shutdown: e.g. the app closed the sink's client. */
  closedBecause;
  seq = 0;
  waiters = [];
  /** The last write failed (in whole or part): the next complete success is a recovery. */
  failing = false;
  /**
   * Entries a spool kept at shutdown's deadline instead of dead-lettering them: still pending (their
   * records stay on disk, not acked, and the next start delivers them).
   */
  kept = 0;
  /** Of `pending`, what a drain can deliver now (not what a spool keeps for the next start, nor a backlog not started yet). */
  get drainable() {
    return this.pending;
  }
  /** Whether shutdown has finished (new items are refused). */
  get closed() {
    return this.closedForGood;
  }
  stats() {
    const stats = this.counters.snapshot(this.pending, this.queueDepth, this.inFlight);
    const host = this.sink.hostStats?.();
    if (host) stats.host = host;
    if (this.spool) stats.spool = this.spool.stats();
    const oldest = this.oldestHeldCreatedAt();
    stats.oldestPendingAgeMs = oldest === void 0 ? 0 : Math.max(0, Date.now() - oldest);
    return stats;
  }
  /** When the oldest item held in memory was deferred (epoch ms), if any is held. */
  oldestHeldCreatedAt() {
    return void 0;
  }
  /** Whether an item handed over now would be queued rather than dropped for want of room. */
  get hasRoom() {
    return this.spool !== void 0 || this.pending < this.options.maxQueueSize;
  }
  /** Hands a dead letter's item back (a redrive): accepted again, counted in `redriven` too. Returns whether it was queued. */
  redrive(item) {
    this.counters.redriven++;
    return this.enqueue(item);
  }
  /** This sink's counts by item kind, for the kinds it has seen. */
  kindCounts() {
    return kindCountsOf(this.counters);
  }
  /** Counts an item in; returns its entry, or `undefined` when shutdown has finished (then it is dead-lettered as `closed`). */
  accept(item) {
    this.counters.accepted++;
    this.counters.kind(item.kind).accepted++;
    const entry2 = { item, attempts: 0, seq: ++this.seq };
    if (this.hooks.observer?.delivered) entry2.acceptedAt = performance.now();
    if (!this.closedForGood) return entry2;
    const message = `deferred after ${this.closedBecause ?? "the application shut down"}`;
    this.hooks.deadLetter(this.bury([{ entry: entry2, retryable: false, message }], "closed"));
    return void 0;
  }
  /**
   * One write of `entries`. Counts what got through, dead-letters what cannot be retried (after one
   * try when `oneTry`), and hands the entries to retry to `keep` — all in one synchronous step.
   */
  async writeEntries(entries, attempt, oneTry, keep) {
    for (const entry2 of entries) entry2.attempts++;
    this.spool?.markBatch(entries);
    this.counters.writeStarted();
    const started = performance.now();
    let failures;
    let retryAfterMs;
    let cutByShutdown = false;
    try {
      const items2 = entries.map((e) => e.item);
      const result = await guardedWrite(this.sink, items2, attempt, this.options.writeTimeoutMs, this.hardStop, (settled) => this.counters.abandoned(settled));
      const outcome = outcomeOf(result, entries, this.sink.name);
      failures = outcome.failures;
      this.counters.duplicates += outcome.duplicates;
      retryAfterMs = failures.length > 0 ? retryAfterOf(failures, result?.retryAfterMs) : void 0;
    } catch (error) {
      cutByShutdown = this.hardStop.signal.aborted && error === this.hardStop.signal.reason;
      failures = entries.map((entry2) => failureOf(entry2, { error }));
      retryAfterMs = failures[0]?.retryAfterMs;
    }
    const ended = performance.now();
    this.counters.lastWriteMs = ended - started;
    this.counters.writeEnded();
    if (failures.length > 0) noteFirstErrors(failures);
    const summary = failures.length > 0 && !cutByShutdown ? failureSummary(failures, entries.length) : void 0;
    if (summary !== void 0) this.counters.failedWrite(summary, failures[0].code);
    const stopping = this.hardStop.signal.aborted;
    const retry = [];
    const notRetryable = [];
    const exhausted = [];
    const requeue = [];
    const requeues = this.spool?.requeues === true && !oneTry && !stopping;
    for (const failure of failures) {
      if (!failure.retryable) notRetryable.push(failure);
      else if (requeues && failure.entry.attempts >= this.options.maxAttempts) requeue.push(failure.entry);
      else if (oneTry || stopping || failure.entry.attempts >= this.options.maxAttempts) exhausted.push(failure);
      else retry.push(failure.entry);
    }
    this.counters.delivered += entries.length - failures.length;
    const failed = failures.length === 0 ? void 0 : new Set(failures.map((failure) => failure.entry));
    for (const entry2 of entries) if (!failed?.has(entry2)) this.counters.kind(entry2.item.kind).delivered++;
    if (this.spool) this.ackDelivered(entries, failures);
    if (itemWatch.watching > 0) watchDelivered(entries, failures);
    if (requeue.length > 0) for (const entry2 of this.spool.requeue(requeue)) retry.push(entry2);
    keep(retry);
    const letters = [...this.bury(notRetryable, "not-retryable"), ...this.bury(exhausted, stopping ? "shutdown" : "attempts-exhausted")];
    this.reportWrite(summary, failures.length === 0);
    if (letters.length > 0) this.hooks.deadLetter(letters);
    this.notifyProgress();
    this.tellObserver(entries, failed, failures, ended);
    return { retryAfterMs };
  }
  /**
   * Tells the write observer (if any) of a write and of its delivered entries' lag, once the write is
   * accounted for; an observer that throws is ignored (metrics never break delivery).
   */
  tellObserver(entries, failed, failures, ended) {
    const observer = this.hooks.observer;
    if (!observer) return;
    try {
      observer.wrote(this.sink.name, this.counters.lastWriteMs, entries.length, failures.length, failures[0]?.code);
      if (observer.delivered) {
        for (const entry2 of entries) {
          if (entry2.acceptedAt !== void 0 && !failed?.has(entry2)) observer.delivered(this.sink.name, entry2.item.kind, ended - entry2.acceptedAt);
        }
      }
    } catch {
    }
  }
  reportWrite(summary, complete) {
    if (summary !== void 0) {
      this.failing = true;
      this.hooks.writeFailed(this.sink.name, summary);
    } else if (complete) {
      this.counters.succeeded();
      if (!this.failing) return;
      this.failing = false;
      this.hooks.recovered?.(this.sink.name);
    }
  }
  /** Acks in the spool the entries of a write that went through. */
  ackDelivered(entries, failures) {
    if (failures.length === 0) return this.spool.ack(entries);
    const failed = new Set(failures.map((failure) => failure.entry));
    this.spool.ack(entries.filter((entry2) => !failed.has(entry2)));
  }
  /**
   * Counts failures as dead letters and returns the letters (the caller hands them to the hooks); with
   * a spool, acks them there — except at shutdown's deadline, when the spool keeps them for the next
   * start instead (they stay pending, and no letter is made).
   */
  bury(failures, reason) {
    if (failures.length === 0) return [];
    if (this.spool) {
      const entries = failures.map((failure) => failure.entry);
      if (reason === "shutdown" && entries.every((entry2) => entry2.spoolSeq)) {
        this.kept += entries.length;
        this.spool.keep(entries.length);
        if (itemWatch.watching > 0) for (const entry2 of entries) itemWatch.settled(entry2.item, "kept");
        return [];
      }
      this.spool.ack(entries);
    }
    const at = this.counters.buried(failures.length, reason);
    for (const failure of failures) this.counters.kind(failure.entry.item.kind).deadLettered++;
    if (itemWatch.watching > 0) for (const failure of failures) itemWatch.settled(failure.entry.item, "dead-lettered");
    return failures.map(({ entry: entry2, message, code }) => {
      const letter = { item: entry2.item, sink: this.sink.name, reason, error: message, attempts: entry2.attempts, at };
      if (code !== void 0) letter.code = code;
      if (entry2.firstError && entry2.attempts > 1) letter.firstError = entry2.firstError;
      return letter;
    });
  }
  /** Last line of defence: entries caught in an unexpected error (already taken out by the caller) are dead-lettered, never lost. */
  failInternally(stranded, error) {
    const message = `internal error: ${errorMessage(error)}`;
    this.hooks.deadLetter(this.bury(stranded.map((entry2) => ({ entry: entry2, retryable: false, message })), "not-retryable"));
    this.hooks.writeFailed(this.sink.name, message);
    this.notifyProgress();
  }
  /** Counts spooled items that could not be read back from disk as dead letters (no item to show). */
  buryUnreadable(count) {
    if (count === 0) return;
    this.counters.buried(count, "unreadable");
    this.hooks.writeFailed(this.sink.name, `${count} spooled item(s) could not be read back from disk`);
  }
  /** Dead-letters entries given up on at shutdown's deadline (a spool keeps them instead). */
  buryAtDeadline(entries) {
    this.hooks.deadLetter(this.bury(entries.map((entry2) => ({ entry: entry2, retryable: false, message: "shutdown deadline reached" })), "shutdown"));
  }
  /** Waits `ms`, or less if shutdown's deadline passes. Never keeps the process alive by itself. */
  sleep(ms) {
    return sleepUnlessAborted(ms, this.hardStop.signal);
  }
  /** Resolves on the next settled entry or after `ms`; keeps the process alive (flush and drain wait here). */
  waitForProgress(ms) {
    return new Promise((resolve6) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve6();
      }
      this.waiters.push(done);
    });
  }
  notifyProgress() {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
};
function watchDelivered(entries, failures) {
  const failed = failures.length === 0 ? void 0 : new Set(failures.map((failure) => failure.entry));
  for (const entry2 of entries) if (!failed?.has(entry2)) itemWatch.settled(entry2.item, "delivered");
}
function noteFirstErrors(failures) {
  const at = Date.now();
  for (const { entry: entry2, message, code } of failures) entry2.firstError ??= code === void 0 ? { message, at } : { message, code, at };
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/inline-processor.ts
var InlineProcessor = class extends ProcessorBase {
  writing = /* @__PURE__ */ new Set();
  stopped = false;
  get pending() {
    return this.writing.size;
  }
  get queueDepth() {
    return 0;
  }
  get inFlight() {
    return this.writing.size;
  }
  enqueue(item) {
    const entry2 = this.accept(item);
    if (!entry2) return false;
    this.writing.add(entry2);
    const release = () => void this.writing.delete(entry2);
    void this.writeEntries([entry2], 1, true, release).catch((error) => {
      if (!this.writing.delete(entry2)) return;
      this.failInternally([entry2], error);
    });
    return true;
  }
  async flush(deadline) {
    const target = this.seq;
    while ([...this.writing].some((entry2) => entry2.seq <= target)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await this.waitForProgress(left);
    }
    return true;
  }
  async shutdown(deadline) {
    if (this.stopped) return 0;
    this.stopped = true;
    await this.flush(deadline);
    const before = this.counters.deadLettered;
    if (this.writing.size > 0) {
      this.hardStop.abort(new Error("shutdown deadline reached"));
      while (this.writing.size > 0) await this.waitForProgress(1e3);
    }
    this.closedForGood = true;
    return this.counters.deadLettered - before;
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/sink-processor.ts
var import_node_async_hooks = require("node:async_hooks");

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/backoff.ts
function retryDelayMs(retry, options, retryAfterMs, random = Math.random) {
  const ceiling = Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** Math.max(0, retry - 1));
  const jittered = Math.round(ceiling * random());
  if (retryAfterMs === void 0 || !(retryAfterMs > 0)) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, options.maxRetryAfterMs));
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/sink-processor.ts
var SinkProcessor = class extends ProcessorBase {
  queue = [];
  /** The entries of the write in flight, or waiting for its retry. */
  flight = [];
  busy = false;
  timer;
  flushers = 0;
  stopped = false;
  /** Exports run in the async context the processor was created in, never in a request's. */
  startExport;
  onTimer;
  /** With a spool: the backlog is not read until `start()` (sinks are attached then). */
  holdingBacklog = true;
  /** After the disk refused a read of the backlog: how long the next try waits (ms; 0 when not paused). */
  readPausedFor = 0;
  lastReadPause = 0;
  /** With a spool: the last seq replayed from a previous process (those items count by kind when read back). */
  replayedUpTo = 0;
  constructor(sink2, options, hooks, spool) {
    super(sink2, options, hooks, spool);
    if (spool) {
      this.counters.accepted += spool.replayed;
      this.seq = spool.lastReplaySeq;
      this.replayedUpTo = spool.lastReplaySeq;
    }
    this.startExport = import_node_async_hooks.AsyncResource.bind(() => void this.exportLoop());
    this.onTimer = import_node_async_hooks.AsyncResource.bind(() => {
      this.timer = void 0;
      if (this.busy || this.queue.length === 0) return;
      this.busy = true;
      void this.exportLoop();
    });
  }
  /** While flushing or shut down, batches go out at once, without lingering. */
  get draining() {
    return this.stopped || this.flushers > 0;
  }
  get pending() {
    return this.queue.length + this.flight.length + this.kept + (this.spool?.backlog ?? 0);
  }
  get drainable() {
    if (this.closedForGood) return 0;
    return this.held + (this.backlogOwed ? this.spool.backlog : 0);
  }
  /** Items held in memory (queued, in flight or waiting for a retry). */
  get held() {
    return this.queue.length + this.flight.length;
  }
  /**
   * Backlog on disk ready to be read back: a spool, started, with records not in memory, not paused by
   * a read error, and not past shutdown's deadline (what is left then stays on disk for the next start).
   */
  get backlogReady() {
    return this.backlogOwed && this.readPausedFor === 0 && !this.hardStop.signal.aborted;
  }
  /** Backlog on disk this process owes now (a spool, started, records not in memory): what `flush()` and the drain wait for. */
  get backlogOwed() {
    return !this.holdingBacklog && (this.spool?.backlog ?? 0) > 0;
  }
  /**
   * Starts delivering what the spool holds from a previous process (called once the sinks are
   * attached, at bootstrap). Without a spool, nothing to do.
   */
  start() {
    this.holdingBacklog = false;
    this.schedule();
  }
  oldestHeldCreatedAt() {
    let oldest = this.queue.length > 0 ? this.queue[0].item.createdAt : void 0;
    for (const entry2 of this.flight) if (oldest === void 0 || entry2.item.createdAt < oldest) oldest = entry2.item.createdAt;
    return oldest;
  }
  get queueDepth() {
    return this.queue.length;
  }
  get inFlight() {
    return this.flight.length;
  }
  /** Accept an item, or drop (and count) it when the queue is full. Returns whether it was queued. */
  enqueue(item) {
    const entry2 = this.accept(item);
    if (!entry2) return false;
    if (this.spool) return this.enqueueSpooled(entry2);
    if (this.pending >= this.options.maxQueueSize) {
      this.counters.drop(item.kind);
      if (itemWatch.watching > 0) itemWatch.settled(item, "dropped");
      return false;
    }
    this.queue.push(entry2);
    this.schedule();
    return true;
  }
  /**
   * With a spool: the item is appended first (dropped, counted, when the spool refuses it), then held
   * in memory when there is room and nothing waits on disk before it; otherwise it waits on disk and
   * is read back in order as the queue empties.
   */
  enqueueSpooled(entry2) {
    const spool = this.spool;
    if (!spool.append(entry2)) {
      this.counters.drop(entry2.item.kind);
      if (itemWatch.watching > 0) itemWatch.settled(entry2.item, "dropped");
      return false;
    }
    this.seq = entry2.seq;
    if (spool.backlog === 0 && this.held < this.options.maxQueueSize) {
      spool.held(entry2);
      this.queue.push(entry2);
    } else {
      spool.backlog++;
      if (itemWatch.watching > 0) itemWatch.settled(entry2.item, "kept");
    }
    this.schedule();
    return true;
  }
  /**
   * Reads backlog records back from disk into the queue, as far as `maxQueueSize` allows. A read the
   * disk refuses (EMFILE, EIO) leaves the backlog as it was and pauses reading it, with a backoff
   * (100 ms doubling to `maxBackoffMs`), said once per failure through the sink's warnings.
   */
  refill() {
    if (!this.backlogReady) return;
    let paged;
    try {
      paged = this.spool.pageIn(this.options.maxQueueSize - this.held);
    } catch (error) {
      this.pauseReading(error);
      return;
    }
    this.lastReadPause = 0;
    for (const record of paged.records) {
      if (record.spoolSeq <= this.replayedUpTo) this.counters.kind(record.item.kind).accepted++;
      const entry2 = { item: record.item, attempts: 0, seq: record.spoolSeq, spoolSeq: record.spoolSeq };
      if (record.batch !== void 0) entry2.marked = record.batch;
      this.queue.push(entry2);
    }
    this.buryUnreadable(paged.unreadable);
  }
  pauseReading(error) {
    this.readPausedFor = this.lastReadPause = Math.min(Math.max(100, this.lastReadPause * 2), Math.max(100, this.options.maxBackoffMs));
    this.hooks.writeFailed(
      this.sink.name,
      `could not read ${this.spool.backlog} spooled item(s) back from ${this.spool.dir}: ${errorMessage(error)}; trying again in ${this.readPausedFor} ms`
    );
    setTimeout(() => {
      this.readPausedFor = 0;
      this.schedule();
    }, this.readPausedFor).unref();
  }
  /**
   * Export everything queued now, without lingering, and resolve `true` once every item accepted
   * before the call has been delivered or dead-lettered — or `false` when `deadline` (epoch ms) passes.
   */
  async flush(deadline) {
    const target = this.seq;
    this.flushers++;
    try {
      while (this.oldestPendingSeq() <= target) {
        this.schedule();
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await this.waitForProgress(left);
      }
      return true;
    } finally {
      this.flushers--;
    }
  }
  /**
   * Drain until nothing is pending or `deadline` (epoch ms) passes — items arriving meanwhile
   * included — then abort what is in flight and dead-letter the rest with reason `shutdown`. From then
   * on new items are dead-lettered at once. Idempotent. Resolves with the number given up on.
   */
  async shutdown(deadline) {
    if (this.stopped) return 0;
    this.stopped = true;
    while ((this.held > 0 || this.backlogOwed) && Date.now() < deadline) await this.flush(deadline);
    const before = this.counters.deadLettered;
    if (this.held > 0 || this.busy) {
      this.hardStop.abort(new Error("shutdown deadline reached"));
      while (this.busy) await this.waitForProgress(1e3);
      this.buryAtDeadline(this.queue.splice(0));
    }
    this.closedForGood = true;
    this.clearTimer();
    return this.counters.deadLettered - before;
  }
  oldestPendingSeq() {
    let oldest = this.queue.length > 0 ? this.queue[0].seq : Number.POSITIVE_INFINITY;
    for (const entry2 of this.flight) if (entry2.seq < oldest) oldest = entry2.seq;
    if (this.backlogOwed) oldest = Math.min(oldest, this.spool.backlogFrom);
    if ((this.spool?.requeuedPending ?? 0) > 0) oldest = 0;
    return oldest;
  }
  schedule() {
    if (this.busy || this.hardStop.signal.aborted) return;
    const behind = this.backlogReady;
    if (this.queue.length === 0 && !behind) return;
    if (this.draining || behind || this.queue.length >= this.options.maxBatchSize) {
      this.clearTimer();
      this.busy = true;
      setImmediate(this.startExport);
      return;
    }
    if (this.timer) return;
    const waited = Date.now() - this.queue[0].item.createdAt;
    this.timer = setTimeout(this.onTimer, Math.max(0, this.options.flushIntervalMs - waited));
    this.timer.unref();
  }
  clearTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = void 0;
  }
  /** Runs with `busy` set; exports batch after batch while there is a full batch or we are draining. */
  async exportLoop() {
    try {
      do {
        this.refill();
        const batch = this.queue.splice(0, this.nextBatchSize());
        if (batch.length === 0) break;
        try {
          await this.deliver(batch);
        } catch (error) {
          const stranded = this.flight;
          this.flight = [];
          this.failInternally(stranded, error);
        }
      } while (this.queue.length >= this.options.maxBatchSize || this.draining || this.backlogReady);
    } finally {
      this.busy = false;
      this.notifyProgress();
      this.schedule();
    }
  }
  /**
   * How many queued entries the next batch takes: `maxBatchSize`, but a replayed item that began a
   * write of the previous process begins one of the same size (and the batch before it stops short of
   * it), so the same items go out together again and a receiver sees the same Idempotency-Key.
   */
  nextBatchSize() {
    const max = this.options.maxBatchSize;
    const head = this.queue[0]?.marked;
    if (head !== void 0 && this.queue[0].attempts === 0) return Math.min(head, max);
    const limit = Math.min(max, this.queue.length);
    for (let i = 1; i < limit; i++) if (this.queue[i].marked !== void 0) return i;
    return max;
  }
  /** Writes a batch, retrying failed entries until delivered, dead-lettered or stopped. */
  async deliver(batch) {
    this.flight = batch;
    const keep = (retry) => {
      this.flight = retry;
    };
    while (this.flight.length > 0) {
      const entries = this.flight;
      if (this.hardStop.signal.aborted) {
        this.flight = [];
        this.buryAtDeadline(entries);
        this.notifyProgress();
        return;
      }
      let attempt = 0;
      for (const entry2 of entries) if (entry2.attempts > attempt) attempt = entry2.attempts;
      attempt++;
      const { retryAfterMs } = await this.writeEntries(entries, attempt, false, keep);
      if (this.flight.length === 0) break;
      this.counters.retried += this.flight.length;
      for (const entry2 of this.flight) this.counters.kind(entry2.item.kind).retried++;
      await this.sleep(retryDelayMs(attempt, this.options, retryAfterMs));
    }
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool.ts
var import_node_fs8 = require("node:fs");

// ../../work/main/packages/nestjs-deferred-work/src/spool/disk-full.ts
var DISK_FULL_CODES = /* @__PURE__ */ new Set(["ENOSPC", "EDQUOT", "EFBIG"]);
function isDiskFull(error) {
  return DISK_FULL_CODES.has(error?.code ?? "");
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/crc32.ts
var import_node_zlib = require("node:zlib");
function crc32(bytes, start = 0, end = bytes.length, previous = 0) {
  if (end <= start) return previous >>> 0;
  return (0, import_node_zlib.crc32)(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), previous >>> 0);
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/frame.ts
var FRAME_HEADER_BYTES = 24;
var MAX_PAYLOAD_BYTES = 1 << 30;
var TWO_32 = 2 ** 32;
function writeU64(buf, value, offset) {
  buf.writeUInt32LE(value % TWO_32, offset);
  buf.writeUInt32LE(Math.floor(value / TWO_32), offset + 4);
}
function readU64(buf, offset) {
  return buf.readUInt32LE(offset) + buf.readUInt32LE(offset + 4) * TWO_32;
}
function frameCrc(buf, offset, length) {
  const partial = crc32(buf, offset, offset + 4);
  return crc32(buf, offset + 8, offset + FRAME_HEADER_BYTES + length, partial);
}
function encodeFrame(seq, timestamp, payload, byteLength) {
  const length = byteLength ?? (typeof payload === "string" ? Buffer.byteLength(payload, "utf8") : payload.length);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  frame.writeUInt32LE(length, 0);
  writeU64(frame, seq, 8);
  writeU64(frame, timestamp, 16);
  if (typeof payload === "string") frame.write(payload, FRAME_HEADER_BYTES, length, "utf8");
  else payload.copy(frame, FRAME_HEADER_BYTES);
  frame.writeUInt32LE(frameCrc(frame, 0, length), 4);
  return frame;
}
function framePayload(buf, frame) {
  return Buffer.from(buf.subarray(frame.offset + FRAME_HEADER_BYTES, frame.offset + frame.size));
}
function readFrame(buf, offset, afterSeq) {
  if (buf.length - offset < FRAME_HEADER_BYTES) return "short";
  const length = buf.readUInt32LE(offset);
  if (length > MAX_PAYLOAD_BYTES || offset + FRAME_HEADER_BYTES + length > buf.length) return "short";
  if (frameCrc(buf, offset, length) !== buf.readUInt32LE(offset + 4)) return "bad";
  const seq = readU64(buf, offset + 8);
  if (seq <= afterSeq) return "bad";
  return { seq, timestamp: readU64(buf, offset + 16), offset, size: FRAME_HEADER_BYTES + length };
}
function scanFrames(buf) {
  const frames = [];
  let torn = 0;
  let offset = 0;
  let lastSeq = 0;
  let goodLength = 0;
  while (offset < buf.length) {
    const frame = readFrame(buf, offset, lastSeq);
    if (typeof frame === "object") {
      frames.push(frame);
      lastSeq = frame.seq;
      offset += frame.size;
      goodLength = offset;
      continue;
    }
    torn++;
    if (frame === "bad") {
      const next2 = offset + FRAME_HEADER_BYTES + buf.readUInt32LE(offset);
      if (next2 < buf.length && typeof readFrame(buf, next2, lastSeq) === "object") {
        offset = next2;
        continue;
      }
    }
    break;
  }
  return { frames, torn, goodLength };
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/group-commit.ts
var GroupCommit = class {
  constructor(intervalMs, flush) {
    this.intervalMs = intervalMs;
    this.flush = flush;
  }
  intervalMs;
  flush;
  /** Fsync calls made by all rounds. */
  fsyncs = 0;
  /** Rounds whose fsync failed (their writes may not be durable; their waiters were rejected). */
  errors = 0;
  written = 0;
  durable = 0;
  failedUpTo = 0;
  lastError;
  waiters = [];
  timer;
  running;
  /** Counts one write, to be made durable by the next round. */
  wrote() {
    this.written++;
    this.arm();
  }
  /** Resolves when every write counted so far is durable; rejects when their round's fsync failed. */
  synced() {
    const target = this.written;
    if (this.durable >= target) return Promise.resolve();
    if (this.failedUpTo >= target && !this.running && !this.timer) return Promise.reject(this.lastError);
    return new Promise((resolve6, reject) => {
      this.waiters.push({ target, resolve: resolve6, reject });
      this.timer?.ref();
    });
  }
  /** Runs a round now (after the one in flight) and stops the timer: for closing. */
  async flushNow() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = void 0;
    await this.running;
    if (this.written > Math.max(this.durable, this.failedUpTo)) await this.round();
  }
  arm() {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => {
      this.timer = void 0;
      void this.round();
    }, this.intervalMs);
    if (this.waiters.length === 0) this.timer.unref();
  }
  round() {
    const target = this.written;
    const run2 = (async () => {
      try {
        this.fsyncs += await this.flush();
        this.durable = target;
        this.settle(target, void 0, false);
      } catch (error) {
        this.errors++;
        this.failedUpTo = target;
        this.lastError = error;
        this.settle(target, error, true);
      } finally {
        this.running = void 0;
        if (this.written > target) this.arm();
      }
    })();
    this.running = run2;
    return run2;
  }
  settle(target, error, failed) {
    const due = this.waiters.filter((waiter) => waiter.target <= target);
    this.waiters = this.waiters.filter((waiter) => waiter.target > target);
    for (const waiter of due) {
      if (failed) waiter.reject(error);
      else waiter.resolve();
    }
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/queued-writes.ts
var WRITE_AT_BYTES = 1 << 20;
var QueuedWrites = class {
  constructor(retryMs, closing) {
    this.retryMs = retryMs;
    this.closing = closing;
  }
  retryMs;
  closing;
  /** Writes the disk refused. */
  errors = 0;
  /** Why the last write failed; cleared by the next one that succeeds. */
  error;
  /** Segments with frames appended and not written yet. */
  unwritten = /* @__PURE__ */ new Set();
  scheduled = false;
  retryTimer;
  writeTurn = () => {
    this.scheduled = false;
    this.writeAll();
  };
  /** `segment` has a frame queued: write it at the end of the turn, or now past 1 MiB. */
  queued(segment) {
    this.unwritten.add(segment);
    if (segment.unwrittenBytes >= WRITE_AT_BYTES) this.writeAll();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.writeTurn);
    }
  }
  /** `segment` is deleted: nothing of it is left to write. */
  forget(segment) {
    this.unwritten.delete(segment);
  }
  /**
   * Writes every segment's queued frames. On a failure the rest stays queued, the error is kept and a
   * retry is timed; returns whether everything was written.
   */
  writeAll() {
    for (const segment of this.unwritten) {
      try {
        segment.writeQueued();
      } catch (error) {
        this.errors++;
        this.error = error;
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = void 0;
          if (!this.closing()) this.writeAll();
        }, Math.max(50, this.retryMs)).unref();
        return false;
      }
      this.unwritten.delete(segment);
    }
    this.error = void 0;
    return true;
  }
  /** Stops the retry timer (closing). */
  stop() {
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }
  /** Bytes of frames not written yet. */
  get bytes() {
    return [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenBytes, 0);
  }
  /** Records not acked whose frames are not written yet. */
  get records() {
    return [...this.unwritten].reduce((sum, segment) => sum + segment.unwrittenRecords, 0);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-set.ts
var import_node_fs6 = require("node:fs");
var import_node_util2 = require("node:util");

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-file.ts
var import_node_fs4 = require("node:fs");
var import_node_path2 = require("node:path");
var import_node_util = require("node:util");

// ../../work/main/packages/nestjs-deferred-work/src/spool/ack-entry.ts
var ACK_ENTRY_BYTES = 12;
var TWO_322 = 2 ** 32;
function encodeAcks(seqs) {
  const buf = Buffer.allocUnsafe(seqs.length * ACK_ENTRY_BYTES);
  seqs.forEach((seq, i) => {
    const at = i * ACK_ENTRY_BYTES;
    buf.writeUInt32LE(seq % TWO_322, at);
    buf.writeUInt32LE(Math.floor(seq / TWO_322), at + 4);
    buf.writeUInt32LE(crc32(buf, at, at + 8), at + 8);
  });
  return buf;
}
var MARK_START = 2147483648;
var MARK_COUNT = 3221225472;
var FLAGS = 3221225472;
function entry(buf, at, value, flags) {
  buf.writeUInt32LE(value % TWO_322, at);
  buf.writeUInt32LE((Math.floor(value / TWO_322) | flags) >>> 0, at + 4);
  buf.writeUInt32LE(crc32(buf, at, at + 8), at + 8);
}
function encodeMark(seq, count) {
  const buf = Buffer.allocUnsafe(2 * ACK_ENTRY_BYTES);
  entry(buf, 0, seq, MARK_START);
  entry(buf, ACK_ENTRY_BYTES, count, MARK_COUNT);
  return buf;
}
function decodeAckFile(buf) {
  const acks = [];
  const marks = /* @__PURE__ */ new Map();
  let start;
  for (let at = 0; at + ACK_ENTRY_BYTES <= buf.length; at += ACK_ENTRY_BYTES) {
    const valid = crc32(buf, at, at + 8) === buf.readUInt32LE(at + 8);
    const high = buf.readUInt32LE(at + 4);
    const value = buf.readUInt32LE(at) + (high & ~FLAGS) * TWO_322;
    const flags = (high & FLAGS) >>> 0;
    if (valid && flags === MARK_COUNT && start !== void 0) marks.set(start, value);
    start = valid && flags === MARK_START ? value : void 0;
    if (valid && flags === 0) acks.push(value);
  }
  return { acks, marks };
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/frame-queue.ts
var import_node_fs = require("node:fs");
var FrameQueue = class {
  /** Bytes of the queued frames. */
  bytes = 0;
  frames = [];
  seqs = [];
  /** Queues the frame of record `seq`. */
  push(frame, seq) {
    this.frames.push(frame);
    this.seqs.push(seq);
    this.bytes += frame.length;
  }
  /** How many queued records `isPending` counts (those not acked). */
  count(isPending) {
    let count = 0;
    for (const seq of this.seqs) if (isPending(seq)) count++;
    return count;
  }
  /** The queued frames as one buffer (what a read past the file's end finds). */
  joined() {
    return Buffer.concat(this.frames, this.bytes);
  }
  /**
   * Writes the queued frames to `fd` at `start` (the file's end), in one write. When the OS refuses
   * part of it (disk full, an I/O error), the whole frames it took are kept, the file is cut back after
   * the last of them (no partial frame is left), the rest stays queued, and the error is thrown.
   */
  writeTo(fd, start) {
    const frames = this.frames;
    const buf = frames.length === 1 ? frames[0] : Buffer.concat(frames, this.bytes);
    let done = 0;
    try {
      while (done < buf.length) done += (0, import_node_fs.writeSync)(fd, buf, done, buf.length - done, start + done);
    } catch (error) {
      let kept = 0;
      let whole = 0;
      for (const frame of frames) {
        if (kept + frame.length > done) break;
        kept += frame.length;
        whole++;
      }
      try {
        (0, import_node_fs.ftruncateSync)(fd, start + kept);
      } catch {
      }
      this.frames = frames.slice(whole);
      this.seqs = this.seqs.slice(whole);
      this.bytes -= kept;
      throw error;
    }
    this.clear();
  }
  /** Drops every queued frame. */
  clear() {
    this.frames = [];
    this.seqs = [];
    this.bytes = 0;
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/file-writes.ts
var import_node_fs2 = require("node:fs");
function writeAllAt(fd, buf, position, sizeBefore) {
  let done = 0;
  try {
    while (done < buf.length) done += (0, import_node_fs2.writeSync)(fd, buf, done, buf.length - done, position === null ? null : position + done);
  } catch (error) {
    try {
      (0, import_node_fs2.ftruncateSync)(fd, sizeBefore);
    } catch {
    }
    throw error;
  }
}
function truncateFile(path, length) {
  const fd = (0, import_node_fs2.openSync)(path, import_node_fs2.constants.O_RDWR | import_node_fs2.constants.O_NOFOLLOW);
  try {
    (0, import_node_fs2.ftruncateSync)(fd, length);
  } finally {
    (0, import_node_fs2.closeSync)(fd);
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-name.ts
function segmentBaseName(firstSeq) {
  return `segment-${String(firstSeq).padStart(16, "0")}`;
}
function parseSegmentName(file) {
  const match = /^segment-(\d+)\.log$/.exec(file);
  return match ? Number(match[1]) : void 0;
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-records.ts
var NONE2 = 0;
var PENDING = 1;
var ACKED = 2;
var SegmentRecords = class {
  constructor(firstSeq) {
    this.firstSeq = firstSeq;
    this.lastSeq = firstSeq - 1;
  }
  firstSeq;
  /** Records not acked. */
  pending = 0;
  /** Highest seq recorded (`firstSeq - 1` when none). */
  lastSeq;
  states = new Uint8Array(256);
  times = new Float64Array(256);
  /** Byte offset of each record's frame in the log file (what `readPending` reads). */
  offsets = new Float64Array(256);
  sizes = new Uint32Array(256);
  /** Index below which no record is pending. */
  cursor = 0;
  /** Whether `seq` falls in this segment's range. */
  holds(seq) {
    return seq >= this.firstSeq && seq <= this.lastSeq;
  }
  /** Whether `seq` is a record of this segment not acked yet. */
  isPending(seq) {
    return this.holds(seq) && this.states[seq - this.firstSeq] === PENDING;
  }
  /** Marks `seq` acked; `false` when it is not a pending record here. */
  ack(seq) {
    if (!this.isPending(seq)) return false;
    this.states[seq - this.firstSeq] = ACKED;
    this.pending--;
    return true;
  }
  /** The pending seqs above `afterSeq`, in order, at most `limit` of them. */
  pendingAfter(afterSeq, limit) {
    const seqs = [];
    const count = this.lastSeq - this.firstSeq + 1;
    for (let i = Math.max(0, afterSeq + 1 - this.firstSeq); i < count && seqs.length < limit; i++) {
      if (this.states[i] === PENDING) seqs.push(this.firstSeq + i);
    }
    return seqs;
  }
  /** Append time (epoch ms) of the oldest pending record, or `undefined` when none is pending. */
  oldestPendingTime() {
    if (this.pending === 0) return void 0;
    const count = this.lastSeq - this.firstSeq + 1;
    while (this.cursor < count && this.states[this.cursor] !== PENDING) this.cursor++;
    return this.times[this.cursor];
  }
  /** The byte range `[start, end)` of the log file that holds the frames of `seqs` (increasing, not empty). */
  span(seqs) {
    const start = this.offsets[seqs[0] - this.firstSeq];
    const last = seqs[seqs.length - 1] - this.firstSeq;
    return { start, end: this.offsets[last] + this.sizes[last] };
  }
  /** Records `seq` as pending (appended at `timestamp`, its frame at `offset`); a seq already known is left alone. */
  add(seq, timestamp, offset, frameSize) {
    const index = seq - this.firstSeq;
    if (index >= this.states.length) this.grow(index);
    if (this.states[index] !== NONE2) return;
    this.states[index] = PENDING;
    this.times[index] = timestamp;
    this.offsets[index] = offset;
    this.sizes[index] = frameSize;
    this.pending++;
    this.lastSeq = Math.max(this.lastSeq, seq);
  }
  grow(index) {
    let capacity = this.states.length;
    while (capacity <= index) capacity *= 2;
    const states = new Uint8Array(capacity);
    states.set(this.states);
    const times = new Float64Array(capacity);
    times.set(this.times);
    const offsets = new Float64Array(capacity);
    offsets.set(this.offsets);
    const sizes = new Uint32Array(capacity);
    sizes.set(this.sizes);
    this.states = states;
    this.times = times;
    this.offsets = offsets;
    this.sizes = sizes;
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-dir.ts
var import_node_fs3 = require("node:fs");
var import_node_path = require("node:path");

// ../../work/main/packages/nestjs-deferred-work/src/core/errors/deferred-work-config.error.ts
var DeferredWorkConfigError = class extends Error {
  constructor(option, problem, fix) {
    super(`DeferredWorkModule: invalid option "${option}": ${problem}. ${fix}`);
    this.option = option;
  }
  option;
  name = "DeferredWorkConfigError";
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-dir.ts
var SPOOL_FILE_MODE = 384;
var NO_FOLLOW = import_node_fs3.constants.O_NOFOLLOW;
function fixFor(code, source) {
  switch (code) {
    case "ENOTDIR":
    case "EEXIST":
      return `A part of that path is a file, not a directory: point ${source.option} at a directory (or move the file away).`;
    case "EACCES":
    case "EPERM":
      return `The process may not write there: point ${source.option} at a directory it owns, or give its user write access (chown / chmod u+rwx).`;
    case "EROFS":
      return `That file system is read-only: point ${source.option} at a writable, persistent volume.`;
    case "ELOOP":
      return "The spool never follows a symbolic link in its directory: remove the link (the spool writes only its own regular files there).";
    default:
      return `Point ${source.option} at a writable directory on a persistent disk.`;
  }
}
function describe(dir, source) {
  return (0, import_node_path.resolve)(source.given) === (0, import_node_path.resolve)(dir) ? dir : `${dir} (sink folder under ${source.option} ${source.given})`;
}
function spoolDirError(dir, source, error) {
  const { code, message } = error;
  return new DeferredWorkConfigError(source.option, `cannot use the spool directory ${describe(dir, source)}: ${message}`, fixFor(code, source));
}
function prepareSpoolDir(dir, source) {
  let stat;
  try {
    (0, import_node_fs3.mkdirSync)(dir, { recursive: true, mode: 448 });
    stat = (0, import_node_fs3.statSync)(dir);
  } catch (error) {
    throw spoolDirError(dir, source, error);
  }
  if (!stat.isDirectory()) {
    throw new DeferredWorkConfigError(source.option, `the spool path ${describe(dir, source)} is not a directory`, fixFor("ENOTDIR", source));
  }
  const mode = stat.mode & 511;
  if ((mode & 2) !== 0) {
    throw new DeferredWorkConfigError(
      source.option,
      `the spool directory ${describe(dir, source)} is writable by every user (mode ${mode.toString(8).padStart(3, "0")})`,
      `It holds the app's payloads: run chmod 700 ${dir} (or chmod o-w), or point ${source.option} at a directory of the app's own.`
    );
  }
}
function readNoFollow(path) {
  const fd = (0, import_node_fs3.openSync)(path, import_node_fs3.constants.O_RDONLY | NO_FOLLOW);
  try {
    return (0, import_node_fs3.readFileSync)(fd);
  } finally {
    (0, import_node_fs3.closeSync)(fd);
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-file.ts
var { O_APPEND, O_CREAT, O_EXCL, O_RDONLY, O_TRUNC, O_WRONLY } = import_node_fs4.constants;
var READ_FLAGS = O_RDONLY | NO_FOLLOW;
var fsyncAsync = (0, import_node_util.promisify)(import_node_fs4.fsync);
var SegmentFile = class _SegmentFile {
  constructor(dir, firstSeq) {
    this.firstSeq = firstSeq;
    const base = segmentBaseName(firstSeq);
    this.logPath = (0, import_node_path2.join)(dir, `${base}.log`);
    this.ackPath = (0, import_node_path2.join)(dir, `${base}.acks`);
    this.records = new SegmentRecords(firstSeq);
  }
  firstSeq;
  /** The log file's path. */
  logPath;
  /** The ack file's path. */
  ackPath;
  /** Bytes of the log file. */
  logBytes = 0;
  /** Bytes of the ack file. */
  ackBytes = 0;
  /** Written since the last fsync. */
  logDirty = false;
  ackDirty = false;
  /** Batch marks found in the ack file at load (first seq to count; see `encodeMark`). */
  marks = /* @__PURE__ */ new Map();
  /** No more appends: the log descriptor is closed after its last fsync. */
  sealed = false;
  /** Unlinked: descriptors are closed as soon as no fsync is in flight. */
  deleted = false;
  logFd;
  ackFd;
  records;
  /** Frames appended and not written yet (they follow the file's last byte), and their bytes. */
  queue = new FrameQueue();
  syncsInFlight = 0;
  /** Records not acked. */
  get pending() {
    return this.records.pending;
  }
  /** Highest seq written to this segment (`firstSeq - 1` when none). */
  get lastSeq() {
    return this.records.lastSeq;
  }
  /** A new, empty segment, created (`wx`) and open for appends. */
  static create(dir, firstSeq, flag = "wx") {
    const segment = new _SegmentFile(dir, firstSeq);
    segment.logFd = (0, import_node_fs4.openSync)(segment.logPath, O_WRONLY | O_CREAT | NO_FOLLOW | (flag === "wx" ? O_EXCL : O_TRUNC), SPOOL_FILE_MODE);
    return segment;
  }
  /**
   * An existing segment, read back: its valid frames, minus acked ones. A torn tail is cut off the
   * file (so it is counted once, and never followed by new data); a torn ack entry likewise. Sealed.
   */
  static load(dir, firstSeq) {
    const segment = new _SegmentFile(dir, firstSeq);
    segment.sealed = true;
    const bytes = readNoFollow(segment.logPath);
    const scan = scanFrames(bytes);
    for (const frame of scan.frames) if (frame.seq >= firstSeq) segment.records.add(frame.seq, frame.timestamp, frame.offset, frame.size);
    segment.logBytes = scan.goodLength;
    if (scan.goodLength < bytes.length) truncateFile(segment.logPath, scan.goodLength);
    if ((0, import_node_fs4.existsSync)(segment.ackPath)) {
      const acks = readNoFollow(segment.ackPath);
      const decoded = decodeAckFile(acks);
      for (const seq of decoded.acks) segment.ack(seq);
      segment.marks = decoded.marks;
      segment.ackBytes = acks.length - acks.length % ACK_ENTRY_BYTES;
      if (segment.ackBytes < acks.length) truncateFile(segment.ackPath, segment.ackBytes);
    }
    return { segment, torn: scan.torn };
  }
  /**
   * Appends one encoded frame (seq `seq`, appended at `timestamp`) in memory: it reaches the file with
   * the next `writeQueued()` (the spool calls it once per event-loop turn), with the frames queued
   * before and after it in one write.
   */
  append(frame, seq, timestamp) {
    if (this.logFd === void 0 || this.sealed) throw new Error(`Spool segment ${this.logPath} is sealed`);
    const offset = this.logBytes;
    this.queue.push(frame, seq);
    this.logBytes += frame.length;
    this.logDirty = true;
    this.records.add(seq, timestamp, offset, frame.length);
  }
  /** Bytes of frames appended and not yet written to the file. */
  get unwrittenBytes() {
    return this.queue.bytes;
  }
  /** Records not acked whose frames are not written to the file yet. */
  get unwrittenRecords() {
    return this.queue.count((seq) => this.isPending(seq));
  }
  /**
   * Writes the queued frames to the file, in one write. When the OS refuses part of it (disk full, an
   * I/O error), the whole frames it took are kept, the file is cut back after the last of them (no
   * partial frame is left), the rest stays queued for the next call, and the error is thrown.
   */
  writeQueued() {
    if (this.queue.bytes === 0 || this.logFd === void 0) return;
    this.queue.writeTo(this.logFd, this.logBytes - this.queue.bytes);
  }
  /** Whether `seq` falls in this segment's range. */
  holds(seq) {
    return this.records.holds(seq);
  }
  /** Whether `seq` is a record of this segment not acked yet. */
  isPending(seq) {
    return this.records.isPending(seq);
  }
  /** Marks `seq` acked in memory; `false` when it is not a pending record here. */
  ack(seq) {
    return this.records.ack(seq);
  }
  /** Appends ack entries for `seqs` to the ack file (no fsync: the group commit does it). */
  writeAcks(seqs) {
    if (seqs.length > 0) this.writeAckEntries(encodeAcks(seqs));
  }
  /** Appends a batch mark (a write of `count` records from `seq`) to the ack file, like acks. */
  writeMark(seq, count) {
    this.writeAckEntries(encodeMark(seq, count));
  }
  writeAckEntries(entries) {
    if (this.deleted) return;
    this.ackFd ??= (0, import_node_fs4.openSync)(this.ackPath, O_WRONLY | O_APPEND | O_CREAT | NO_FOLLOW, SPOOL_FILE_MODE);
    writeAllAt(this.ackFd, entries, null, this.ackBytes);
    this.ackBytes += entries.length;
    this.ackDirty = true;
  }
  /** The pending seqs of this segment above `afterSeq`, in order, at most `limit` of them. */
  pendingAfter(afterSeq, limit) {
    return this.records.pendingAfter(afterSeq, limit);
  }
  /**
   * Reads the frames of `seqs` (records of this segment, in increasing order) back from the log file
   * with one read of the span they cover, checksums checked. A record whose frame no longer checks
   * out (the disk changed under us) is left out of the result.
   */
  read(seqs) {
    if (seqs.length === 0) return [];
    const { start, end } = this.records.span(seqs);
    const span = Buffer.allocUnsafe(end - start);
    const written = this.logBytes - this.queue.bytes;
    if (start < written) {
      const fd = (0, import_node_fs4.openSync)(this.logPath, READ_FLAGS);
      try {
        const upTo = Math.min(end, written) - start;
        let done = 0;
        while (done < upTo) {
          const n = (0, import_node_fs4.readSync)(fd, span, done, upTo - done, start + done);
          if (n === 0) break;
          done += n;
        }
      } finally {
        (0, import_node_fs4.closeSync)(fd);
      }
    }
    if (end > written) {
      const memory = this.queue.joined();
      memory.copy(span, Math.max(0, written - start), Math.max(start, written) - written, end - written);
    }
    const wanted = new Set(seqs);
    const records = [];
    for (const frame of scanFrames(span).frames) {
      if (wanted.has(frame.seq)) records.push({ seq: frame.seq, timestamp: frame.timestamp, payload: framePayload(span, frame) });
    }
    return records;
  }
  /** Append time (epoch ms) of the oldest pending record, or `undefined` when none is pending. */
  oldestPendingTime() {
    return this.records.oldestPendingTime();
  }
  /** Fsyncs whatever was written since the last call (queued frames written first); resolves with the number of fsyncs made. */
  async sync() {
    this.writeQueued();
    const fds = [];
    if (this.logDirty && this.logFd !== void 0) fds.push(this.logFd);
    if (this.ackDirty && this.ackFd !== void 0) fds.push(this.ackFd);
    this.logDirty = this.ackDirty = false;
    if (fds.length === 0) {
      this.closeIdle();
      return 0;
    }
    this.syncsInFlight++;
    try {
      await Promise.all(fds.map((fd) => fsyncAsync(fd)));
    } finally {
      this.syncsInFlight--;
      this.closeIdle();
    }
    return fds.length;
  }
  /** Stops appends to this segment; its log descriptor closes after its last fsync. */
  seal() {
    this.sealed = true;
    this.closeIdle();
  }
  /** Removes both files; descriptors close once no fsync is in flight. */
  delete() {
    this.deleted = true;
    for (const path of [this.logPath, this.ackPath]) {
      try {
        (0, import_node_fs4.unlinkSync)(path);
      } catch (error) {
        if (error.code !== "ENOENT") throw error;
      }
    }
    this.logBytes = this.ackBytes = 0;
    this.queue.clear();
    this.logDirty = this.ackDirty = false;
    this.closeIdle();
  }
  /** Closes both descriptors now (the spool's `close()`, after its last sync). */
  close() {
    this.sealed = true;
    this.closeIdle(true);
  }
  closeIdle(all = false) {
    if (this.syncsInFlight > 0) return;
    const idle = this.sealed && !this.logDirty && this.queue.bytes === 0;
    if (this.logFd !== void 0 && (this.deleted || all || idle)) {
      (0, import_node_fs4.closeSync)(this.logFd);
      this.logFd = void 0;
    }
    if (this.ackFd !== void 0 && (this.deleted || all)) {
      (0, import_node_fs4.closeSync)(this.ackFd);
      this.ackFd = void 0;
    }
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-recovery.ts
var import_node_fs5 = require("node:fs");
var import_node_path3 = require("node:path");
function recoverSegments(dir) {
  const segments = [];
  let nextSeq = 1;
  let torn = 0;
  for (const file of (0, import_node_fs5.readdirSync)(dir).sort()) {
    const firstSeq = parseSegmentName(file);
    if (firstSeq === void 0) continue;
    const loaded = SegmentFile.load(dir, firstSeq);
    torn += loaded.torn;
    segments.push(loaded.segment);
    nextSeq = Math.max(nextSeq, firstSeq, loaded.segment.lastSeq + 1);
  }
  return { segments, nextSeq, torn };
}
function removeOrphanAcks(dir, segments) {
  for (const file of (0, import_node_fs5.readdirSync)(dir)) {
    const match = /^(segment-\d+)\.acks$/.exec(file);
    if (!match || segments.some((segment) => segment.ackPath === (0, import_node_path3.join)(dir, file))) continue;
    try {
      (0, import_node_fs5.unlinkSync)((0, import_node_path3.join)(dir, file));
    } catch {
    }
  }
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/segment-set.ts
var fsyncAsync2 = (0, import_node_util2.promisify)(import_node_fs6.fsync);
var SegmentSet = class {
  /**
   * Takes over the segments a previous process left and starts a new active one at `nextSeq`
   * (nothing is ever written after a previous process's, possibly torn, tail).
   */
  constructor(dir, recovered, nextSeq, writes) {
    this.dir = dir;
    this.writes = writes;
    this.list = [...recovered];
    const same = this.list.findIndex((segment) => segment.firstSeq === nextSeq);
    if (same >= 0) this.list.splice(same, 1);
    this.active = SegmentFile.create(dir, nextSeq, same >= 0 ? "w" : "wx");
    this.list.push(this.active);
    this.dirDirty = true;
    for (const segment of this.list) this.bytes += segment.logBytes + segment.ackBytes;
    for (const segment of this.list.filter((s) => s !== this.active && s.pending === 0)) this.remove(segment);
    removeOrphanAcks(dir, this.list);
  }
  dir;
  writes;
  /** Every segment on disk, in seq order; the active one last. */
  list;
  /** The segment appended to. */
  active;
  /** Bytes of the segment and ack files, what `maxBytes` bounds. */
  bytes = 0;
  dirty = /* @__PURE__ */ new Set();
  dirDirty = false;
  /** Seals the active segment and starts a new one at `nextSeq`; the old one goes if nothing in it is pending. */
  roll(nextSeq) {
    const next2 = SegmentFile.create(this.dir, nextSeq);
    const previous = this.active;
    previous.seal();
    this.active = next2;
    this.list.push(next2);
    this.dirDirty = true;
    if (previous.pending === 0) this.remove(previous);
  }
  /** Deletes `segment`'s files and forgets it. */
  remove(segment) {
    this.writes.forget(segment);
    this.bytes -= segment.logBytes + segment.ackBytes;
    segment.delete();
    this.list.splice(this.list.indexOf(segment), 1);
    this.dirty.delete(segment);
  }
  /** The segment whose range holds `seq` (segments are in seq order). */
  find(seq) {
    let low = 0;
    let high = this.list.length - 1;
    while (low <= high) {
      const mid = low + high >> 1;
      const segment = this.list[mid];
      if (seq < segment.firstSeq) high = mid - 1;
      else if (seq > segment.lastSeq) low = mid + 1;
      else return segment;
    }
    return void 0;
  }
  /** `segment` was written to: the next group commit fsyncs it. */
  touched(segment) {
    this.dirty.add(segment);
  }
  /** Fsyncs the segments written since the last call, and the directory when a file came or went; resolves with the number of fsyncs. */
  async sync(dirFd) {
    const segments = [...this.dirty];
    this.dirty.clear();
    const dir = this.dirDirty;
    this.dirDirty = false;
    const counts = await Promise.all([...segments.map((segment) => segment.sync()), dir ? fsyncAsync2(dirFd).then(() => 1) : 0]);
    return counts.reduce((sum, n) => sum + n, 0);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-full.error.ts
var SpoolFullError = class extends Error {
  constructor(dir, reason, detail, options) {
    super(
      reason === "max-bytes" ? `Spool ${dir} is full (${detail}): the record was refused. It empties as sinks confirm records; raise spool.maxBytes if it fills in normal operation.` : `Spool ${dir}: the disk refused the write (${detail}): the record was refused. Free space on that disk, or point the spool at a larger one.`,
      options
    );
    this.dir = dir;
    this.reason = reason;
  }
  dir;
  reason;
  name = "SpoolFullError";
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-lock.ts
var import_node_fs7 = require("node:fs");
var import_node_path5 = require("node:path");

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-locked.error.ts
var import_node_path4 = require("node:path");
var SpoolLockedError = class extends Error {
  constructor(dir, pid, source) {
    const under = source && (0, import_node_path4.resolve)(source.given) !== (0, import_node_path4.resolve)(dir) ? ` (sink folder under ${source.option} ${source.given})` : "";
    super(
      `Spool directory ${dir}${under} is locked by process ${pid}, which is running: one process per spool directory. Give each process (each replica, each worker of a cluster) its own spool dir${source ? ` (${source.option})` : ""}, or stop process ${pid}. If no process uses this spool (the pid was reused by another program), delete ${dir}/spool.lock.`
    );
    this.dir = dir;
    this.pid = pid;
  }
  dir;
  pid;
  name = "SpoolLockedError";
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-lock.ts
var LOCK_FILE = "spool.lock";
var held = /* @__PURE__ */ new Set();
var EMPTY_LOCK_GRACE_MS = 1e3;
function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}
function readPid(path) {
  try {
    const text = readNoFollow(path).toString("utf8").trim();
    return /^\d+$/.test(text) ? Number(text) : NaN;
  } catch (error) {
    if (error.code === "ENOENT") return void 0;
    throw error;
  }
}
function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
var SpoolLock = class _SpoolLock {
  constructor(path) {
    this.path = path;
  }
  path;
  released = false;
  /**
   * Takes the lock of `dir` (which must exist); throws `SpoolLockedError` when a live process holds it
   * (naming `source`, the option and directory the user gave, when `dir` is a sink's folder under it).
   */
  static acquire(dir, source) {
    const path = (0, import_node_path5.resolve)((0, import_node_path5.join)(dir, LOCK_FILE));
    if (held.has(path)) throw new SpoolLockedError(dir, process.pid, source);
    let emptySince;
    for (; ; ) {
      let fd;
      try {
        fd = (0, import_node_fs7.openSync)(path, import_node_fs7.constants.O_WRONLY | import_node_fs7.constants.O_CREAT | import_node_fs7.constants.O_EXCL | NO_FOLLOW, SPOOL_FILE_MODE);
      } catch (error) {
        if (error.code !== "EEXIST") throw source ? spoolDirError(dir, source, error) : error;
        const pid = readPid(path);
        if (pid === void 0) continue;
        if (Number.isNaN(pid)) {
          emptySince ??= Date.now();
          if (Date.now() - emptySince < EMPTY_LOCK_GRACE_MS) {
            sleepSync(10);
            continue;
          }
        } else if (pid !== process.pid && isAlive(pid)) {
          throw new SpoolLockedError(dir, pid, source);
        }
        const again = readPid(path);
        if (again === pid || Number.isNaN(again) && Number.isNaN(pid)) {
          try {
            (0, import_node_fs7.unlinkSync)(path);
          } catch (unlinkError) {
            if (unlinkError.code !== "ENOENT") throw unlinkError;
          }
        }
        emptySince = void 0;
        continue;
      }
      try {
        (0, import_node_fs7.writeSync)(fd, `${process.pid}
`);
      } finally {
        (0, import_node_fs7.closeSync)(fd);
      }
      held.add(path);
      return new _SpoolLock(path);
    }
  }
  /** Releases the lock (idempotent); a lock file that no longer names this process is left alone. */
  release() {
    if (this.released) return;
    this.released = true;
    held.delete(this.path);
    if (readPid(this.path) === process.pid) (0, import_node_fs7.unlinkSync)(this.path);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool-reads.ts
function* replaySegments(segments, replayBefore) {
  for (const segment of [...segments]) {
    if (segment.firstSeq >= replayBefore) break;
    if (segment.pending === 0 || segment.deleted) continue;
    let bytes;
    try {
      bytes = readNoFollow(segment.logPath);
    } catch (error) {
      if (error.code === "ENOENT") continue;
      throw error;
    }
    for (const frame of scanFrames(bytes).frames) {
      if (frame.seq >= replayBefore) return;
      if (segment.isPending(frame.seq)) yield { seq: frame.seq, timestamp: frame.timestamp, payload: framePayload(bytes, frame) };
    }
  }
}
function readPendingRecords(segments, afterSeq, limit) {
  const records = [];
  const missing = [];
  for (const segment of segments) {
    const left = limit - records.length - missing.length;
    if (left <= 0) break;
    if (segment.lastSeq <= afterSeq || segment.pending === 0) continue;
    const seqs = segment.pendingAfter(afterSeq, left);
    const read = segment.read(seqs);
    let r = 0;
    for (const seq of seqs) {
      if (r < read.length && read[r].seq === seq) records.push(read[r++]);
      else missing.push(seq);
    }
  }
  return { records, missing };
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool.options.ts
var SPOOL_DEFAULTS = Object.freeze({
  maxBytes: 256 * 1024 * 1024,
  syncIntervalMs: 200,
  segmentBytes: 8 * 1024 * 1024
});
function check(prefix2, name, value, min, what) {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new DeferredWorkConfigError(
      `${prefix2}.${name}`,
      `expected ${what}, got ${String(value)}`,
      `Set it to ${what}, or leave it out for the default (${SPOOL_DEFAULTS[name]}).`
    );
  }
  return value;
}
function resolveSpoolOptions(options = {}, prefix2 = "spool") {
  const maxBytes = check(prefix2, "maxBytes", options.maxBytes ?? SPOOL_DEFAULTS.maxBytes, 1024, "an integer of bytes >= 1024");
  const segmentBytes = check(prefix2, "segmentBytes", options.segmentBytes ?? Math.min(SPOOL_DEFAULTS.segmentBytes, maxBytes), 256, "an integer of bytes >= 256");
  const syncIntervalMs = check(prefix2, "syncIntervalMs", options.syncIntervalMs ?? SPOOL_DEFAULTS.syncIntervalMs, 0, "an integer of milliseconds >= 0");
  if (segmentBytes > maxBytes) {
    throw new DeferredWorkConfigError(
      `${prefix2}.segmentBytes`,
      `${segmentBytes} is larger than maxBytes (${maxBytes})`,
      "Make segmentBytes at most maxBytes (a few segments fit in maxBytes when it is 8x or more)."
    );
  }
  return { maxBytes, syncIntervalMs: Math.min(syncIntervalMs, 2147483647), segmentBytes };
}

// ../../work/main/packages/nestjs-deferred-work/src/spool/spool.ts
var Spool = class _Spool {
  constructor(dir, options, lock, dirFd) {
    this.dir = dir;
    this.lock = lock;
    this.dirFd = dirFd;
    this.options = options;
    this.commit = new GroupCommit(options.syncIntervalMs, () => this.flushDirty());
    this.writes = new QueuedWrites(options.syncIntervalMs, () => this.closing !== void 0);
    const { segments, nextSeq, torn } = recoverSegments(dir);
    this.counts.torn += torn;
    this.nextSeq = nextSeq;
    this.replayBefore = nextSeq;
    this.segments = new SegmentSet(dir, segments, nextSeq, this.writes);
    this.commit.wrote();
  }
  dir;
  lock;
  dirFd;
  /** Resolved options, every default applied. */
  options;
  segments;
  nextSeq;
  replayBefore;
  commit;
  closing;
  counts = { appended: 0, acked: 0, refused: 0, torn: 0, ackWriteFailures: 0, bytesWritten: 0 };
  writes;
  /**
   * Opens (creating it if needed) the spool in `dir`: takes its lock (`SpoolLockedError` when another
   * live process holds it; a dead holder's lock is taken over), reads every segment back (torn records
   * skipped, counted and cut off) and starts a new segment. Synchronous: it reads the segments once.
   * Options: `maxBytes` 256 MiB, `syncIntervalMs` 200 ms, `segmentBytes` 8 MiB (see `SpoolOptions`).
   * The directory is created with mode 0700 and its files 0600; one writable by every user, a path
   * that is not a directory, or a symbolic link among its files fails with `DeferredWorkConfigError`
   * naming `source.option` (default `spool.dir`) and the path given there (`source.given`).
   */
  static open(dir, options = {}, source) {
    const named = { option: source?.option ?? "spool.dir", given: source?.given ?? dir };
    const resolved = resolveSpoolOptions(options);
    prepareSpoolDir(dir, named);
    const lock = SpoolLock.acquire(dir, named);
    let dirFd;
    try {
      dirFd = (0, import_node_fs8.openSync)(dir, "r");
      return new _Spool(dir, resolved, lock, dirFd);
    } catch (error) {
      if (dirFd !== void 0) (0, import_node_fs8.closeSync)(dirFd);
      lock.release();
      if (error.code === "ELOOP") throw spoolDirError(dir, named, error);
      throw error;
    }
  }
  /**
   * Appends one record and returns its sequence number. The records of one event-loop turn are written
   * to the file together at its end (one `write`; at once past 1 MiB), so they survive the death of the
   * process from then on, and are durable once `synced()` resolves (within `syncIntervalMs`). Throws
   * `SpoolFullError` when `maxBytes` would be passed or the disk refused the last write (no part of the
   * record is kept), and `RangeError` when the record is larger than a segment. Records accepted before
   * the disk refused a write stay in memory and are written when it has room again.
   */
  append(record) {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    if (this.writes.error !== void 0 && !this.writes.writeAll()) {
      const error = this.writes.error;
      this.counts.refused++;
      if (!isDiskFull(error)) throw error;
      throw new SpoolFullError(this.dir, "disk-full", `${error.code}: ${error.message}`, { cause: error });
    }
    const length = typeof record === "string" ? Buffer.byteLength(record, "utf8") : record.length;
    const size = FRAME_HEADER_BYTES + length;
    if (size > this.options.segmentBytes) {
      throw new RangeError(
        `Spool ${this.dir}: a record of ${length} bytes does not fit in a segment (spool.segmentBytes ${this.options.segmentBytes}, ${FRAME_HEADER_BYTES} of them the header). Raise segmentBytes or send smaller records.`
      );
    }
    const { active } = this.segments;
    if (this.segments.bytes + size > this.options.maxBytes && active.logBytes > 0 && active.pending === 0) {
      try {
        this.segments.roll(this.nextSeq);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
      }
    }
    if (this.segments.bytes + size > this.options.maxBytes) {
      this.counts.refused++;
      throw new SpoolFullError(this.dir, "max-bytes", `${this.segments.bytes} of ${this.options.maxBytes} bytes in use, the record needs ${size}`);
    }
    try {
      const full = this.segments.active.logBytes > 0 && this.segments.active.logBytes + size > this.options.segmentBytes;
      if (full) this.segments.roll(this.nextSeq);
      const seq = this.nextSeq;
      const timestamp = Date.now();
      const target = this.segments.active;
      target.append(encodeFrame(seq, timestamp, record, length), seq, timestamp);
      this.nextSeq++;
      this.segments.bytes += size;
      this.counts.appended++;
      this.counts.bytesWritten += size;
      this.segments.touched(target);
      this.commit.wrote();
      this.writes.queued(target);
      return seq;
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      this.counts.refused++;
      throw new SpoolFullError(this.dir, "disk-full", `${error.code}: ${error.message}`, { cause: error });
    }
  }
  /**
   * Confirms records (their sink delivered them): each is written to its segment's `.acks` file,
   * made durable by the same group commit; a segment whose records are all acked is deleted with its
   * ack file. Unknown or already acked seqs are ignored. Returns how many records were newly acked.
   */
  ack(seqs) {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    const bySegment = /* @__PURE__ */ new Map();
    for (const seq of typeof seqs === "number" ? [seqs] : seqs) {
      const segment = this.segments.find(seq);
      if (!segment?.ack(seq)) continue;
      let list = bySegment.get(segment);
      if (!list) bySegment.set(segment, list = []);
      list.push(seq);
    }
    let acked = 0;
    for (const [segment, list] of bySegment) {
      acked += list.length;
      if (segment.pending === 0 && segment !== this.segments.active) {
        this.segments.remove(segment);
        continue;
      }
      if (segment.pending === 0 && this.rollDrained()) continue;
      const before = segment.ackBytes;
      try {
        segment.writeAcks(list);
      } catch (error) {
        if (!isDiskFull(error)) throw error;
        this.counts.ackWriteFailures += list.length;
        continue;
      }
      this.segments.bytes += segment.ackBytes - before;
      this.counts.bytesWritten += segment.ackBytes - before;
      this.segments.touched(segment);
      this.commit.wrote();
    }
    this.counts.acked += acked;
    return acked;
  }
  /**
   * Records that a write of `count` records begins with `seq` (the pending records from it, in seq
   * order): written to the ack file of `seq`'s segment, made durable by the group commit like an ack.
   * After a restart `replayBatches()` gives it back, so the same records can be written together
   * again. Ignored when `seq` is not pending; a disk refusing it is counted in `ackWriteFailures`.
   */
  markBatch(seq, count) {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    const segment = this.segments.find(seq);
    if (!segment?.isPending(seq)) return;
    const before = segment.ackBytes;
    try {
      segment.writeMark(seq, count);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      this.counts.ackWriteFailures++;
      return;
    }
    this.segments.bytes += segment.ackBytes - before;
    this.counts.bytesWritten += segment.ackBytes - before;
    this.segments.touched(segment);
    this.commit.wrote();
  }
  /**
   * The batch marks a previous process left (see `markBatch`): first seq to count, for the records
   * `replay()` yields. The last mark written for a seq wins.
   */
  replayBatches() {
    const marks = /* @__PURE__ */ new Map();
    for (const segment of this.segments.list) {
      if (segment.firstSeq >= this.replayBefore) break;
      for (const [seq, count] of segment.marks) if (segment.isPending(seq)) marks.set(seq, count);
    }
    return marks;
  }
  /**
   * The records a previous process left un-acked (found when this spool was opened), in sequence
   * order, skipping those acked since. Torn records are never yielded (they were counted at open).
   * Records appended by this process are not replayed: their owner still holds them in memory.
   */
  *replay() {
    yield* replaySegments(this.segments.list, this.replayBefore);
  }
  /**
   * Up to `limit` pending (not acked) records with a seq above `afterSeq`, in seq order, from every
   * segment — a previous process's and this one's. Reads each segment's span once (`readSync`; records
   * not written yet come from memory). What a reader pages back in from disk: records appended but not
   * held in memory (a backlog), or replayed. `missing` lists the pending seqs of that range whose frame
   * no longer checks out (the disk changed under us): every pending seq tried is in one of the two lists.
   */
  readPending(afterSeq, limit) {
    if (this.closing) throw new Error(`Spool ${this.dir} is closed`);
    return readPendingRecords(this.segments.list, afterSeq, limit);
  }
  /** The highest seq of a record a previous process left (those `replay()` yields are at or below it); 0 when none. */
  get lastReplaySeq() {
    return this.replayBefore - 1;
  }
  /**
   * Resolves when everything appended and acked before the call is fsynced (by the group commit, at
   * most `syncIntervalMs` later); rejects when that fsync failed. While awaited, the timer keeps the
   * process alive.
   */
  synced() {
    return this.commit.synced();
  }
  /** Counters and gauges of the spool (see `SpoolStats`). */
  stats() {
    let pendingRecords = 0;
    let oldest;
    for (const segment of this.segments.list) {
      pendingRecords += segment.pending;
      oldest ??= segment.oldestPendingTime();
    }
    return {
      pendingRecords,
      bytesOnDisk: this.segments.bytes,
      oldestPendingAgeMs: oldest === void 0 ? 0 : Math.max(0, Date.now() - oldest),
      segments: this.segments.list.length,
      appended: this.counts.appended,
      bytesWritten: this.counts.bytesWritten,
      acked: this.counts.acked,
      refused: this.counts.refused,
      fsyncs: this.commit.fsyncs,
      syncErrors: this.commit.errors,
      tornRecords: this.counts.torn,
      ackWriteFailures: this.counts.ackWriteFailures,
      writeErrors: this.writes.errors,
      unwrittenBytes: this.writes.bytes,
      unwrittenRecords: this.writes.records
    };
  }
  /**
   * Writes and fsyncs what is left, closes the files and releases the lock. Idempotent. Records the
   * disk still refuses then are lost: `stats().unwrittenRecords` counts them afterwards.
   */
  close() {
    this.closing ??= (async () => {
      try {
        this.writes.stop();
        this.writes.writeAll();
        await this.commit.flushNow();
      } finally {
        for (const segment of this.segments.list) segment.close();
        (0, import_node_fs8.closeSync)(this.dirFd);
        this.lock.release();
      }
    })();
    return this.closing;
  }
  /**
   * Writes the records appended so far now, rather than at the end of the turn (what a caller does when
   * it is about to confirm them elsewhere). Returns whether everything was written; a failure is kept
   * and handled as at the end of a turn.
   */
  writeNow() {
    return this.closing ? false : this.writes.writeAll();
  }
  /**
   * Every record of the active segment is acked: starts a new (empty) one, which deletes it, so a
   * spool with nothing pending holds no bytes. Returns `false` when the disk refused the new file (the
   * acks are then written as usual).
   */
  rollDrained() {
    try {
      this.segments.roll(this.nextSeq);
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      return false;
    }
    this.commit.wrote();
    return true;
  }
  async flushDirty() {
    if (!this.writes.writeAll()) throw this.writes.error;
    return this.segments.sync(this.dirFd);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/processor/sink-spool.ts
function parseItem(payload) {
  try {
    return JSON.parse(payload.toString("utf8"));
  } catch {
    return void 0;
  }
}
var SinkSpool = class {
  constructor(sinkName, settings, hooks) {
    this.sinkName = sinkName;
    this.hooks = hooks;
    const { dir, requeue, source, ...options } = settings;
    this.requeues = requeue === true;
    this.spool = Spool.open(dir, options, source);
    this.replayed = this.backlog = this.spool.stats().pendingRecords;
    this.lastSeq = this.spool.lastReplaySeq;
    this.replayBatches = this.spool.replayBatches();
    this.marks = new Map(this.replayBatches);
    const torn = this.spool.stats().tornRecords;
    if (this.replayed > 0 || torn > 0) {
      hooks.log(
        `Spool of sink "${sinkName}" (${dir}): ${this.replayed} item(s) left by a previous process will be delivered before new ones` + (torn > 0 ? `; ${torn} torn record(s) (cut short by a crash or failing their checksum) were skipped` : "") + "."
      );
    }
  }
  sinkName;
  hooks;
  /** Records on disk only, not held in memory: replayed ones and those that did not fit in the queue. */
  backlog;
  /** Records a previous process left, found at open. */
  replayed;
  spool;
  /** Every record at or below it is held in memory or settled; the backlog is above it. */
  cursor = 0;
  counts = { refused: 0, failed: 0, unreadable: 0, kept: 0, requeued: 0 };
  /**
   * Entries sent to the back by `requeue`, waiting on disk in that order: their record stays where it
   * is (nothing is written again), and each is read back after every backlog record below `before`
   * (the records appended before it was sent back).
   */
  parked = [];
  /** Records sent to the back by `requeue` and not settled yet (parked, or read back and in memory). */
  requeuedSeqs = /* @__PURE__ */ new Set();
  /** The seq of the last record appended (or left by a previous process). */
  lastSeq;
  /** See `SinkSpoolSettings.requeue`. */
  requeues;
  /** The writes a previous process began (first seq to size), for replayed records to form the same batches. */
  replayBatches;
  /** The batch marks in the spool for pending records (first seq to size): one is written once. */
  marks;
  /** Refusals in the current spool-full episode (0 when the spool has room). */
  refusing = 0;
  /** The seq of the last record a previous process left (0 when none). */
  get lastReplaySeq() {
    return this.spool.lastReplaySeq;
  }
  /** No backlog record has a seq below it. */
  get backlogFrom() {
    return this.cursor + 1;
  }
  /** The spool's directory. */
  get dir() {
    return this.spool.dir;
  }
  /**
   * Appends an accepted entry's item (giving it a stable `id` first) and sets the entry's `spoolSeq`
   * and `seq`. Returns `false` when it could not be spooled (spool full, disk refusing): the caller
   * drops it, counted; the first refusal of an episode is logged.
   */
  append(entry2) {
    const item = entry2.item;
    item.id ??= newItemId();
    let seq;
    try {
      seq = this.spool.append(JSON.stringify(entry2.item));
    } catch (error) {
      return this.refuse(error);
    }
    if (this.refusing > 0) {
      this.hooks.log(`Spool of sink "${this.sinkName}" has room again; ${this.refusing} item(s) were refused while it was full.`);
      this.refusing = 0;
    }
    entry2.spoolSeq = seq;
    entry2.seq = seq;
    this.lastSeq = seq;
    return true;
  }
  /** Counts and reports a new item the spool refused; `false`. */
  refuse(error) {
    if (error instanceof SpoolFullError) {
      this.counts.refused++;
      if (this.refusing++ === 0) this.hooks.warn(`spool-full:${this.sinkName}`, `Sink "${this.sinkName}": ${error.message} Items are dropped (counted in stats().sinks["${this.sinkName}"].spool.refused) until it has room.`);
    } else {
      this.counts.failed++;
      this.hooks.warn(`spool-failed:${this.sinkName}`, `Sink "${this.sinkName}": an item could not be spooled and was dropped: ${errorMessage(error)}`);
    }
    return false;
  }
  /** Writes what was appended in this turn now (see `Spool.writeNow`). */
  writeNow() {
    this.spool.writeNow();
  }
  /** The appended entry is held in memory (there is no backlog to wait behind). */
  held(entry2) {
    this.cursor = entry2.spoolSeq;
  }
  /**
   * Up to `limit` backlog records, in order, read back from disk and parsed into items: the records
   * never held in memory, in seq order, and the entries `requeue` sent back, each after the records
   * appended before it was. `unreadable` counts backlog records that could not be read: their frame
   * no longer checks out, or not an item (never expected: the checksums passed when they were
   * written). Those are acked (they would fail again) and the caller counts them dead-lettered; the
   * records after them are read as usual. Throws what the disk throws (a read error): the backlog is
   * left as it was.
   */
  pageIn(limit) {
    const wanted = Math.min(limit, this.backlog);
    if (wanted <= 0) return { records: [], unreadable: 0 };
    const onDisk = this.backlog - this.parked.length;
    const asked = Math.min(wanted, onDisk);
    const read = asked > 0 ? this.spool.readPending(this.cursor, asked) : { records: [], missing: [] };
    const disk = [...read.records, ...read.missing.map((seq) => ({ seq }))].sort((a, b) => a.seq - b.seq);
    const taken = [];
    let fromDisk = 0;
    let parkedTaken = 0;
    const takeParked = () => {
      const { seq } = this.parked[parkedTaken++];
      const found = this.spool.readPending(seq - 1, 1).records[0];
      taken.push(found?.seq === seq ? found : { seq });
    };
    for (const record of disk) {
      while (taken.length < wanted && parkedTaken < this.parked.length && this.parked[parkedTaken].before <= record.seq) takeParked();
      if (taken.length >= wanted) break;
      taken.push(record);
      fromDisk++;
    }
    const short = fromDisk === disk.length && disk.length < asked ? onDisk - fromDisk : 0;
    if (fromDisk === onDisk || short > 0) while (taken.length < wanted && parkedTaken < this.parked.length) takeParked();
    this.parked.splice(0, parkedTaken);
    if (fromDisk > 0) this.cursor = Math.max(this.cursor, disk[fromDisk - 1].seq);
    this.backlog -= taken.length + short;
    const records = [];
    const bad = [];
    for (const { seq, payload } of taken) {
      const item = payload === void 0 ? void 0 : parseItem(payload);
      const batch = this.replayBatches.get(seq);
      if (batch !== void 0) this.replayBatches.delete(seq);
      if (item === void 0) bad.push(seq);
      else records.push(batch === void 0 ? { spoolSeq: seq, item } : { spoolSeq: seq, item, batch });
    }
    const unreadable = bad.length + short;
    if (bad.length > 0) {
      this.spool.ack(bad);
      for (const seq of bad) this.requeuedSeqs.delete(seq);
    }
    if (unreadable > 0) {
      this.counts.unreadable += unreadable;
      this.hooks.warn(`spool-unreadable:${this.sinkName}`, `Spool of sink "${this.sinkName}": ${unreadable} record(s) could not be read back from ${this.dir} as items; they are counted as dead-lettered.`);
    }
    return { records, unreadable };
  }
  /**
   * Sends entries that used up their attempts to the back of the spool, without writing anything: each
   * record stays where it is (pending, so a restart replays it in its place), the entry leaves memory,
   * and it is read back after the records appended before this call. Returns the entries that have no
   * record (never expected with a spool): the caller keeps retrying those in memory.
   */
  requeue(entries) {
    const stuck = [];
    for (const entry2 of entries) {
      const seq = entry2.spoolSeq;
      if (!seq) {
        stuck.push(entry2);
        continue;
      }
      this.parked.push({ seq, before: this.lastSeq + 1 });
      this.requeuedSeqs.add(seq);
      this.backlog++;
      this.counts.requeued++;
    }
    return stuck;
  }
  /**
   * Marks in the spool that a write of `entries` begins (see `Spool.markBatch`), unless it was marked
   * so already: after a crash, the next process writes the same items together again. Only for
   * entries in seq order (the pending records from the first); a mark the disk refuses is skipped.
   */
  markBatch(entries) {
    const first = entries[0];
    if (first?.spoolSeq === void 0) return;
    first.marked = entries.length;
    if (this.marks.get(first.spoolSeq) === entries.length) return;
    for (let i = 1; i < entries.length; i++) if (!(entries[i].spoolSeq > entries[i - 1].spoolSeq)) return;
    this.marks.set(first.spoolSeq, entries.length);
    try {
      this.spool.markBatch(first.spoolSeq, entries.length);
    } catch {
    }
  }
  /** Records sent to the back by `requeue` and not settled yet. */
  get requeuedPending() {
    return this.requeuedSeqs.size;
  }
  /** Confirms settled entries (delivered, or dead-lettered for cause): their records leave the spool. */
  ack(entries) {
    const seqs = [];
    for (const entry2 of entries) if (entry2.spoolSeq) seqs.push(entry2.spoolSeq);
    if (this.requeuedSeqs.size > 0) for (const seq of seqs) this.requeuedSeqs.delete(seq);
    if (this.marks.size > 0) for (const seq of seqs) this.marks.delete(seq);
    if (seqs.length === 0) return;
    try {
      this.spool.ack(seqs);
    } catch (error) {
      this.hooks.warn(`spool-ack:${this.sinkName}`, `Spool of sink "${this.sinkName}": acks could not be written (${errorMessage(error)}); those items will be delivered again after a restart.`);
    }
  }
  /** Counts entries left in the spool at shutdown's deadline (not acked: the next start delivers them). */
  keep(count) {
    this.counts.kept += count;
  }
  /** Items left in the spool for the next start: kept at the deadline, and the backlog. */
  get leftForNextStart() {
    return this.counts.kept + this.backlog;
  }
  /**
   * Writes and fsyncs what is left and releases the directory's lock. Resolves with the number of items
   * lost because the disk refused to write them to the end (0 unless it is full or failing).
   */
  async close() {
    await this.spool.close();
    return this.spool.stats().unwrittenRecords;
  }
  stats() {
    const s = this.spool.stats();
    return {
      dir: this.dir,
      maxBytes: this.spool.options.maxBytes,
      pending: s.pendingRecords,
      onDiskOnly: this.backlog,
      bytes: s.bytesOnDisk,
      oldestAgeMs: s.oldestPendingAgeMs,
      replayed: this.replayed,
      refused: this.counts.refused,
      failed: this.counts.failed,
      unreadable: this.counts.unreadable,
      keptAtShutdown: this.counts.kept,
      requeued: this.counts.requeued,
      tornRecords: s.tornRecords,
      fsyncs: s.fsyncs,
      syncErrors: s.syncErrors,
      appended: s.appended,
      acked: s.acked,
      bytesWritten: s.bytesWritten
    };
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/warnings/sink-warnings.ts
var MAX_CONDITIONS = 8;
var EPISODES_PER_INTERVAL = 3;
var SinkWarnings = class {
  constructor(logger, limited) {
    this.logger = logger;
    this.limited = limited;
  }
  logger;
  limited;
  sinks = /* @__PURE__ */ new Map();
  failed(sink2, message) {
    let state = this.sinks.get(sink2);
    if (!state) this.sinks.set(sink2, state = { failures: void 0, conditions: /* @__PURE__ */ new Set() });
    if (state.failures === void 0) {
      state.failures = 0;
      if (this.limited.allow(`episode:${sink2}`, EPISODES_PER_INTERVAL)) {
        this.limited.forget(`write:${sink2}:`);
        state.conditions.clear();
      }
    }
    state.failures++;
    let condition = conditionOf(message);
    if (!state.conditions.has(condition)) {
      if (state.conditions.size < MAX_CONDITIONS) state.conditions.add(condition);
      else condition = "*";
    }
    this.limited.warn(`write:${sink2}:${condition}`, `Sink "${sink2}" write failed: ${message}`);
  }
  recovered(sink2) {
    const state = this.sinks.get(sink2);
    if (state?.failures === void 0) return;
    const failures = state.failures;
    state.failures = void 0;
    if (this.limited.allow(`recovered:${sink2}`, EPISODES_PER_INTERVAL)) {
      this.logger.log(`Sink "${sink2}" recovered: a write succeeded after ${failures} failed write(s).`);
    }
  }
};
function conditionOf(message) {
  return message.replace(/"[^"]*"/g, '"\u2026"').replace(/\d+/g, "#").slice(0, 120);
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/callback-runner.ts
var import_node_async_hooks2 = require("node:async_hooks");

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/settle-waiters.ts
var SettleWaiters = class {
  waiters = [];
  /** Resolves `true` once `remaining` tasks with `seq <= target` settled, `false` after `timeoutMs`. */
  wait(target, remaining, timeoutMs) {
    if (remaining === 0) return Promise.resolve(true);
    return new Promise((resolve6) => {
      const waiter = { target, remaining, wake: () => finish(true) };
      const timer = setTimeout(() => finish(false), Math.max(0, timeoutMs));
      const finish = (done) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve6(done);
      };
      this.waiters.push(waiter);
    });
  }
  /** A task settled (delivered or dead-lettered; a retry is not settling). */
  settled(seq) {
    if (this.waiters.length === 0) return;
    for (const waiter of this.waiters) {
      if (seq <= waiter.target && --waiter.remaining === 0) waiter.wake();
    }
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/slowest-runs.ts
var KEPT = 5;
var SlowestRuns = class {
  runs = [];
  record(ms) {
    const runs = this.runs;
    if (runs.length >= KEPT && ms <= runs[runs.length - 1].ms) return;
    runs.push({ ms: Math.round(ms * 10) / 10, at: Date.now() });
    runs.sort((a, b) => b.ms - a.ms);
    if (runs.length > KEPT) runs.length = KEPT;
  }
  snapshot() {
    return this.runs.map((run2) => ({ ...run2 }));
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/task-queue.ts
var TaskQueue = class {
  items = [];
  head = 0;
  get length() {
    return this.items.length - this.head;
  }
  push(value) {
    this.items.push(value);
  }
  /** Puts `value` back at the front (a retry goes before newer work). */
  unshift(value) {
    if (this.head > 0) this.items[--this.head] = value;
    else this.items.unshift(value);
  }
  shift() {
    if (this.head >= this.items.length) return void 0;
    const value = this.items[this.head];
    this.items[this.head++] = void 0;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return value;
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/running-callbacks.ts
var CallbackTimeoutError = class extends Error {
  name = "CallbackTimeoutError";
};
var RunningCallbacks = class {
  constructor(timeoutMs, onTimeout, onError) {
    this.timeoutMs = timeoutMs;
    this.onTimeout = onTimeout;
    this.onError = onError;
  }
  timeoutMs;
  onTimeout;
  onError;
  live = /* @__PURE__ */ new Map();
  timeoutTimer;
  /** A callback started (its `started` set): watched for its deadline. */
  add(task, controller) {
    this.live.set(task, controller);
    if (this.timeoutTimer === void 0) this.arm(this.timeoutMs);
  }
  /** Stops watching `task`; `false` when it was not running (timed out or cut by shutdown before). */
  delete(task) {
    return this.live.delete(task);
  }
  /** The running callbacks and their controllers, oldest first (a copy). */
  entries() {
    return [...this.live];
  }
  arm(ms) {
    this.timeoutTimer = setTimeout(() => this.checkTimeouts(), ms);
    this.timeoutTimer.unref();
  }
  /**
   * Times out every running callback past its deadline (oldest first), then re-arms for the oldest
   * left. The fired timer stays in `timeoutTimer` meanwhile, so callbacks started by the freed slots
   * do not arm a second one.
   */
  checkTimeouts() {
    try {
      const now = performance.now();
      for (const [task, controller] of this.live) {
        if (task.started + this.timeoutMs > now) break;
        this.onTimeout(task, controller);
      }
    } catch (error) {
      this.onError(error);
    }
    this.timeoutTimer = void 0;
    const oldest = this.live.keys().next();
    if (!oldest.done) this.arm(Math.max(1, Math.ceil(oldest.value.started + this.timeoutMs - performance.now())));
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/callback-runner.ts
var CALLBACK_RUNNER_NAME = "callbacks";
var CallbackRunner = class {
  constructor(options, hooks) {
    this.options = options;
    this.hooks = hooks;
    this.live = new RunningCallbacks(
      options.timeoutMs,
      (task, controller) => this.onTimeout(task, controller),
      (error) => this.internalError(error)
    );
    this.pump = import_node_async_hooks2.AsyncResource.bind(() => this.startWhatFits());
    this.startQueued = () => {
      this.scheduled = false;
      this.pump();
    };
  }
  options;
  hooks;
  name = CALLBACK_RUNNER_NAME;
  queue = new TaskQueue();
  running = 0;
  retrying = 0;
  scheduled = false;
  stopped = false;
  /** Shutdown finished: new callbacks are dead-lettered (`closed`) at once. */
  closedForGood = false;
  /** Aborted when shutdown's deadline passes: aborts running callbacks and cuts retry waits. */
  hardStop = new AbortController();
  /** Running callbacks, oldest first, timed out by one timer. */
  live;
  waiters = new SettleWaiters();
  seq = 0;
  /** Starts what fits, always in the async context the runner was created in, never in a request's. */
  pump;
  startQueued;
  /** Here a "write" is one run of one callback. */
  counters = new SinkCounters();
  timedOut = 0;
  overdue = 0;
  finishedLate = 0;
  slowest = new SlowestRuns();
  /** Callbacks queued, running or waiting for a retry. */
  get pending() {
    return this.queue.length + this.running + this.retrying;
  }
  /** Whether shutdown has finished (new callbacks are refused). */
  get closed() {
    return this.closedForGood;
  }
  /**
   * Accept a callback; returns whether it was queued (when not, it was dropped or, after shutdown,
   * dead-lettered — and counted either way). With `inline` (testing) it starts at once, in the
   * caller's turn, whatever the concurrency.
   */
  enqueue(item, inline = false) {
    this.counters.accepted++;
    this.counters.kind("callback").accepted++;
    const task = { item, attempts: 0, seq: ++this.seq, started: 0 };
    if (this.closedForGood) {
      this.bury(task, "closed", "deferred after the application shut down");
      return false;
    }
    if (inline) {
      this.start(task);
      return true;
    }
    if (this.queue.length + this.retrying + this.busySlots >= this.options.maxQueueSize + this.options.concurrency) {
      this.counters.drop("callback");
      return false;
    }
    this.queue.push(task);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.startQueued);
    }
    return true;
  }
  /** Its counts by kind: all `callback`. */
  kindCounts() {
    return kindCountsOf(this.counters);
  }
  stats() {
    return this.counters.snapshot(this.pending, this.queue.length + this.retrying, this.running);
  }
  runnerStats() {
    return {
      running: this.running,
      queued: this.queue.length,
      retrying: this.retrying,
      concurrency: this.options.concurrency,
      timedOut: this.timedOut,
      overdue: this.overdue,
      finishedLate: this.finishedLate,
      slowest: this.slowest.snapshot()
    };
  }
  /** Resolves `true` once every callback accepted before the call has settled, `false` at `deadline` (epoch ms). */
  flush(deadline) {
    this.pump();
    return this.waiters.wait(this.seq, this.pending, deadline - Date.now());
  }
  /**
   * Runs what is queued until nothing is pending or `deadline` passes — callbacks deferred meanwhile
   * included — then aborts the running ones and dead-letters everything left (`shutdown`). From then
   * on new callbacks are dead-lettered (`closed`). Idempotent. Resolves with the number given up on.
   */
  async shutdown(deadline) {
    if (this.stopped) return 0;
    this.stopped = true;
    while (this.pending > 0 && Date.now() < deadline) await this.flush(deadline);
    const before = this.counters.deadLettered;
    this.closedForGood = true;
    if (this.pending > 0) {
      this.hardStop.abort(new Error("shutdown deadline reached"));
      for (const [task, controller] of this.live.entries()) {
        controller?.abort(this.hardStop.signal.reason);
        this.settleRunning(task, "shutdown", "shutdown deadline reached while it was running");
      }
      for (let task = this.queue.shift(); task; task = this.queue.shift()) this.bury(task, "shutdown", "shutdown deadline reached");
      while (this.retrying > 0) await new Promise((resolve6) => setImmediate(resolve6));
    }
    return this.counters.deadLettered - before;
  }
  /** Slots taken: running callbacks, and timed-out ones that ignore their signal and run on. */
  get busySlots() {
    return this.running + this.overdue;
  }
  /** Starts queued callbacks while slots are free (call it through `pump`, for the async context). */
  startWhatFits() {
    if (this.hardStop.signal.aborted) return;
    while (this.busySlots < this.options.concurrency && this.queue.length > 0) this.start(this.queue.shift());
  }
  start(task) {
    task.attempts++;
    this.running++;
    this.counters.writes++;
    this.counters.lastProgressAt = Date.now();
    const controller = task.item.fn.length > 0 ? new AbortController() : void 0;
    task.started = performance.now();
    this.live.add(task, controller);
    let result;
    try {
      result = Promise.resolve(controller ? task.item.fn(controller.signal) : task.item.fn());
    } catch (error) {
      result = Promise.reject(error);
    }
    result.then(
      () => this.onSettled(task, void 0),
      (error) => this.onSettled(task, error ?? new Error("callback rejected"))
    );
  }
  onTimeout(task, controller) {
    try {
      this.timedOut++;
      this.overdue++;
      const message = `callback timed out after ${this.options.timeoutMs} ms${controller ? "; its signal was aborted" : ""}`;
      controller?.abort(new CallbackTimeoutError(message));
      this.settleRunning(task, "timeout", message);
      this.hooks.writeFailed(this.name, `${message} (it may still be running; see stats().callbacks.overdue)`);
    } catch (error) {
      this.internalError(error);
    }
  }
  /** Last line of defence: a throwing hook (a logger, say) must not become an unhandled rejection or an uncaught exception. */
  internalError(error) {
    try {
      this.hooks.writeFailed(this.name, `internal error: ${errorMessage(error)}`);
    } catch {
    }
  }
  /** A callback's promise settled (`error` undefined: fulfilled). Never throws. */
  onSettled(task, error) {
    try {
      const ms = performance.now() - task.started;
      this.counters.lastProgressAt = Date.now();
      this.counters.lastWriteMs = ms;
      this.slowest.record(ms);
      if (!this.live.delete(task)) {
        this.overdue--;
        this.finishedLate++;
        this.pump();
        return;
      }
      this.running--;
      if (error === void 0) {
        this.counters.delivered++;
        this.counters.kind("callback").delivered++;
        this.waiters.settled(task.seq);
      } else {
        this.fail(task, error);
      }
      this.pump();
    } catch (e) {
      this.internalError(e);
    }
  }
  fail(task, error) {
    const message = errorMessage(error);
    this.counters.failedWrite(message);
    const retryable = !(error instanceof SinkWriteError) || error.retryable;
    if (!retryable) this.bury(task, "not-retryable", message);
    else if (task.attempts >= this.options.maxAttempts || this.hardStop.signal.aborted) {
      this.bury(task, this.hardStop.signal.aborted ? "shutdown" : "attempts-exhausted", message);
    } else {
      this.counters.retried++;
      this.counters.kind("callback").retried++;
      this.retrying++;
      this.retryLater(task).catch((e) => this.internalError(e));
    }
    this.hooks.writeFailed(this.name, `callback failed: ${message}`);
  }
  async retryLater(task) {
    await this.sleep(retryDelayMs(task.attempts, { ...this.options, maxRetryAfterMs: 0 }));
    this.retrying--;
    if (this.hardStop.signal.aborted) this.bury(task, "shutdown", "shutdown deadline reached before its retry");
    else {
      this.queue.unshift(task);
      this.pump();
    }
  }
  /** A running task given up on (timeout, shutdown): dead-lettered now; it keeps its slot (as overdue) until it ends. */
  settleRunning(task, reason, message) {
    this.live.delete(task);
    this.running--;
    if (reason === "shutdown") this.overdue++;
    this.bury(task, reason, message);
    this.pump();
  }
  bury(task, reason, message) {
    const at = this.counters.buried(1, reason);
    this.counters.kind("callback").deadLettered++;
    const letter = { item: task.item, sink: this.name, reason, error: message, attempts: task.attempts, at };
    this.waiters.settled(task.seq);
    this.hooks.deadLetter([letter]);
  }
  /** Waits `ms`, or less if shutdown's deadline passes. Never keeps the process alive by itself. */
  sleep(ms) {
    return sleepUnlessAborted(ms, this.hardStop.signal);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/shutdown-report.ts
async function closeSink(name, processor, deadline, logger) {
  const allowed = Math.max(1e3, deadline - Date.now());
  const closed = await settleWithin(Promise.resolve().then(() => processor.sink.shutdown?.()), allowed, true);
  if (closed.status !== "fulfilled") {
    logger.warn(
      closed.status === "pending" ? `Sink "${name}" did not shut down within ${allowed} ms; going on without it.` : `Sink "${name}" shutdown failed.`
    );
  }
  if (!processor.spool) return { spooled: 0, lostOnClose: 0 };
  const left = processor.spool.leftForNextStart;
  const lostOnClose = await processor.spool.close().catch((error) => {
    logger.error(`Spool of sink "${name}" could not be closed: ${errorMessage(error)}`);
    return 0;
  });
  if (lostOnClose > 0) {
    logger.error(`Spool of sink "${name}": ${lostOnClose} item(s) could not be written to ${processor.spool.dir} (the disk refused) and are lost.`);
  }
  return { spooled: left - lostOnClose, lostOnClose };
}
function reportShutdown(logger, shutdownTimeoutMs, undelivered, spooled, withSpools) {
  const spooledTotal = Object.values(spooled).reduce((a, b) => a + b, 0);
  if (spooledTotal > 0) {
    const per = Object.entries(spooled).map(([n, c]) => `${n}: ${c}`).join(", ");
    logger.warn(
      `Shutdown deadline (${shutdownTimeoutMs} ms) passed with ${spooledTotal} items undelivered in spooled sinks (${per}); they stay in the spool and are delivered after the next start.`
    );
  }
  const lostTotal = Object.values(undelivered).reduce((a, b) => a + b, 0);
  if (lostTotal > 0) {
    const per = Object.entries(undelivered).map(([n, c]) => `${n}: ${c}`).join(", ");
    logger.error(
      `Shutdown deadline (${shutdownTimeoutMs} ms) passed with ${lostTotal} items undelivered (${per}); they were dead-lettered. Raise shutdownTimeoutMs or check the sinks.`
    );
  }
  const drained = lostTotal === 0 && spooledTotal === 0;
  return withSpools ? { drained, undelivered, spooled } : { drained, undelivered };
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/sink-admission.ts
function checkSinkTakes(name, processor, item) {
  if (!processor) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `no sink is named "${name}"`,
      "Use the name of a sink configured in DeferredWorkModule.forRoot({ sinks })"
    );
  }
  const kinds = processor.sink.kinds;
  if (kinds && !kinds.includes(item.kind)) {
    throw new DeferredItemRejectedError(
      describeItem(item),
      `sink "${name}" takes only ${kinds.join(", ")} items`,
      `Send ${item.kind} items to a sink that takes them (leave out the item's sink option to use the routing)`
    );
  }
  if (!processor.sink.validate) return;
  try {
    processor.sink.validate(item);
  } catch (error) {
    throw new DeferredItemRejectedError(describeItem(item), `sink "${name}" refuses it: ${errorMessage(error)}`, "Fix the item");
  }
}
function refusalWarning(name, target) {
  if (target instanceof SinkProcessor && target.spool && !target.closed) return void 0;
  if (target.closed) {
    const because = target instanceof CallbackRunner ? void 0 : target.closedBecause;
    return {
      closed: true,
      key: `closed:${name}`,
      message: because ? `An item for "${name}" was deferred after ${because}; it was dead-lettered (reason "closed"). Close the client after app.close(), or keep it open.` : `An item for "${name}" was deferred after the application shut down; it was dead-lettered (reason "closed"). Work deferred after app.close() does not run.`
    };
  }
  const limit = target instanceof CallbackRunner ? `${target.options.maxQueueSize} waiting with all ${target.options.concurrency} slots running; raise callbacks.maxQueueSize or callbacks.concurrency` : `maxQueueSize ${target.options.maxQueueSize}; the sink is slower than the load or unreachable`;
  return { closed: false, key: `full:${name}`, message: `"${name}" queue is full (${limit}); dropping items. See stats().sinks for details.` };
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dispatcher.ts
var Dispatcher = class {
  /**
   * @param inline Testing only (see `nestjs-deferred-work/testing`): every item is written at once, in
   *   the caller's turn, instead of being collected and batched.
   */
  constructor(options, logger = new import_common.Logger("DeferredWork"), inline = false) {
    this.options = options;
    this.logger = logger;
    this.inline = inline;
    this.warnings = new RateLimitedLogger(logger);
    this.sinkWarnings = new SinkWarnings(logger, this.warnings);
    const observers = this;
    const hooks = {
      get observer() {
        return observers.writeObserver;
      },
      deadLetter: (letters) => this.deadLetterDesk.add(letters),
      writeFailed: (sinkName, message) => this.sinkWarnings.failed(sinkName, message),
      recovered: (sinkName) => this.sinkWarnings.recovered(sinkName)
    };
    const spoolHooks = { warn: (key, message) => this.warnings.warn(key, message), log: (message) => logger.log(message) };
    try {
      for (const [name, sink2] of options.sinks) {
        const settings = options.processorOptions.get(name);
        const spoolSettings = options.spools?.get(name);
        const spool = spoolSettings && !inline ? new SinkSpool(name, spoolSettings, spoolHooks) : void 0;
        this.processors.set(name, inline ? new InlineProcessor(sink2, settings, hooks) : new SinkProcessor(sink2, settings, hooks, spool));
      }
    } catch (error) {
      void this.releaseSpools();
      throw error;
    }
    this.runner = new CallbackRunner(options.callbacks, hooks);
    try {
      this.deadLetterDesk = new DeadLetterDesk(options, this.warnings, this.processors);
    } catch (error) {
      void this.releaseSpools();
      throw error;
    }
  }
  options;
  logger;
  inline;
  processors = /* @__PURE__ */ new Map();
  runner;
  warnings;
  sinkWarnings;
  deadLetterDesk;
  rejected = 0;
  closed = 0;
  skipped = 0;
  shutdownPromise;
  settling;
  /** Each sink's shutdown, once started (by the application's shutdown, or by the app closing its client). */
  sinkShutdowns = /* @__PURE__ */ new Map();
  /** Told of every write while set (the library's own metrics); none by default, so nothing is measured. */
  writeObservers = [];
  writeObserver;
  /** Starts delivering what the sinks' spools hold from a previous process (at bootstrap, once the sinks are attached). */
  start() {
    for (const processor of this.processors.values()) if (processor instanceof SinkProcessor) processor.start();
  }
  /** Closes every spool (fsync, release the lock): after shutdown, or when the bootstrap failed. */
  async releaseSpools() {
    await Promise.allSettled([...this.processors.values()].map((processor) => processor.spool?.close()));
    await this.deadLetterDesk?.close();
  }
  /** Validates, routes and enqueues one item. Never throws: a bad item is counted and logged. */
  dispatch(item) {
    try {
      validateItem(item, this.options.maxItemBytes);
    } catch (error) {
      return this.reject(item, error);
    }
    item.id ??= newItemId();
    if (item.kind === "callback") {
      if (!this.runner.enqueue(item, this.inline)) this.refused(CALLBACK_RUNNER_NAME, this.runner);
      return;
    }
    const target = item.sink ?? this.options.routing[item.kind];
    if (typeof target === "string") this.enqueueTo(target, item);
    else for (const name of target) this.enqueueTo(name, item);
  }
  /** Hands the item to the named sink's processor, after its checks; a refusal is counted and logged. */
  enqueueTo(name, item) {
    try {
      const processor = this.processors.get(name);
      checkSinkTakes(name, processor, item);
      if (!processor.enqueue(item)) this.refused(name, processor);
    } catch (error) {
      this.reject(item, error);
    }
  }
  /** Counts and logs an item refused before acceptance. */
  reject(item, error) {
    this.rejected++;
    if (itemWatch.watching > 0) itemWatch.settled(item, "rejected");
    const message = error instanceof Error ? error.message : String(error);
    this.warnings.warn(`rejected:${item?.kind}`, message);
  }
  /** An accepted item that could not be queued: after shutdown (dead-lettered as `closed`), or the queue is full (dropped). */
  refused(name, target) {
    const warning = refusalWarning(name, target);
    if (!warning) return;
    if (warning.closed) this.closed++;
    this.warnings.warn(warning.key, warning.message);
  }
  /** Counts an item that did not run because the request's outcome did not match its `when`. */
  skip(count) {
    this.skipped += count;
  }
  stats() {
    const sinks = {};
    const totals = { accepted: 0, delivered: 0, pending: 0, dropped: 0, deadLettered: 0, retried: 0 };
    for (const [name, processor] of [...this.processors, [CALLBACK_RUNNER_NAME, this.runner]]) {
      const s = processor.stats();
      sinks[name] = s;
      for (const key of Object.keys(totals)) totals[key] += s[key];
    }
    return {
      ...totals,
      rejected: this.rejected,
      skipped: this.skipped,
      closed: this.closed,
      callbacks: this.runner.runnerStats(),
      sinks
    };
  }
  /** Each sink's counts by item kind (the callback runner's as `callbacks`, kind `callback`). */
  kindCounts() {
    const out = {};
    for (const [name, processor] of [...this.processors, [CALLBACK_RUNNER_NAME, this.runner]]) out[name] = processor.kindCounts();
    return out;
  }
  /** Tells `observer` of every write from now on (duration, size, failures) and of each item's delivery lag; returns how to stop. */
  observeWrites(observer) {
    this.writeObservers = [...this.writeObservers, observer];
    this.updateWriteObserver();
    return () => {
      this.writeObservers = this.writeObservers.filter((o) => o !== observer);
      this.updateWriteObserver();
    };
  }
  updateWriteObserver() {
    const all = this.writeObservers;
    this.writeObserver = all.length === 0 ? void 0 : all.length === 1 ? all[0] : {
      wrote: (...args) => all.forEach((o) => o.wrote(...args)),
      delivered: all.some((o) => o.delivered) ? (...args) => all.forEach((o) => o.delivered?.(...args)) : void 0
    };
  }
  /** Items pending in the runner and every sink that a drain can deliver now. */
  pending() {
    let pending = this.runner.pending;
    for (const processor of this.processors.values()) pending += processor.drainable;
    return pending;
  }
  /** Recent dead letters, oldest first (at most `deadLetterCapacity`). */
  deadLetters() {
    return this.deadLetterDesk.recent();
  }
  /**
   * Sends everything pending now and resolves once every item accepted before the call has been
   * delivered, dropped or dead-lettered — `true` — or after `timeoutMs` — `false`.
   */
  async flush(timeoutMs = this.options.shutdownTimeoutMs) {
    const ms = timeoutOr(timeoutMs, this.options.shutdownTimeoutMs);
    const deadline = Date.now() + ms;
    const results = await Promise.all([...this.processors.values(), this.runner].map((p) => p.flush(deadline)));
    return results.every(Boolean);
  }
  /**
   * Resolves once the items accepted before the call — and those that callbacks running then defer —
   * have been delivered, dropped or dead-lettered, or after `shutdownTimeoutMs`; the sinks keep
   * accepting, and items accepted later (under load, say) are not waited for. During shutdown, once
   * the shutdown has ended. Concurrent callers share one drain. What a held client waits for before
   * it closes (`SinkAttachContext.drain`).
   */
  drain() {
    if (this.shutdownPromise) return this.shutdownPromise;
    this.settling ??= this.drainAccepted().finally(() => this.settling = void 0);
    return this.settling;
  }
  /** Two flushes: what was accepted, then what the callbacks that ran meanwhile deferred. */
  async drainAccepted() {
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    const callbacks = this.runner.pending > 0;
    await this.flush(this.options.shutdownTimeoutMs);
    if (callbacks && Date.now() < deadline) await this.flush(deadline - Date.now());
  }
  /**
   * What a held client's close waits for (`SinkAttachContext.holdOpen`): the sinks that use it drain
   * within `shutdownTimeoutMs` and close, as at the application's shutdown — what they could not
   * deliver by then is kept by their spool, or dead-lettered and reported as undelivered by
   * `shutdown()`; items deferred to them later are dead-lettered as `closed`. The other sinks go on.
   * During the application's shutdown, waits for it instead.
   */
  closeSinks(names, because) {
    if (this.shutdownPromise) return this.shutdownPromise;
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    return Promise.all(
      names.map((name) => {
        const processor = this.processors.get(name);
        if (processor && !this.sinkShutdowns.has(name)) processor.closedBecause = because;
        return this.shutdownSink(name, deadline);
      })
    );
  }
  /** The sink's processor's shutdown (drain until `deadline`, then give up), started once. */
  shutdownSink(name, deadline) {
    let done = this.sinkShutdowns.get(name);
    if (done) return done;
    const processor = this.processors.get(name);
    done = processor ? processor.shutdown(deadline) : Promise.resolve(0);
    this.sinkShutdowns.set(name, done);
    return done;
  }
  /** Flushes until nothing a drain can deliver is pending, or `deadline` (epoch ms) passes. */
  async settle(deadline) {
    while (this.pending() > 0 && Date.now() < deadline) await this.flush(Math.max(0, deadline - Date.now()));
  }
  /** Drains within `shutdownTimeoutMs`, then gives up on the rest and reports it. Idempotent. */
  shutdown() {
    this.shutdownPromise ??= this.runShutdown();
    return this.shutdownPromise;
  }
  async runShutdown() {
    const deadline = Date.now() + this.options.shutdownTimeoutMs;
    const undelivered = {};
    const spooled = {};
    await this.settle(deadline);
    const runnerLost = await this.runner.shutdown(deadline);
    if (runnerLost > 0) undelivered[CALLBACK_RUNNER_NAME] = runnerLost;
    await Promise.all(
      [...this.processors].map(async ([name, processor]) => {
        const lost = await this.shutdownSink(name, deadline);
        if (lost > 0) undelivered[name] = lost;
        const closed = await closeSink(name, processor, deadline, this.logger);
        if (closed.lostOnClose > 0) undelivered[name] = (undelivered[name] ?? 0) + closed.lostOnClose;
        if (closed.spooled > 0) spooled[name] = closed.spooled;
      })
    );
    await this.deadLetterDesk.close();
    return reportShutdown(this.logger, this.options.shutdownTimeoutMs, undelivered, spooled, Boolean(this.options.spools?.size));
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/nest/handles/handle-tokens.ts
var handlesInUse = {
  queues: /* @__PURE__ */ new Set(),
  clients: /* @__PURE__ */ new Set(),
  metrics: /* @__PURE__ */ new Set(),
  pinoLoggers: /* @__PURE__ */ new Set()
};
function anyHandleInUse() {
  return handlesInUse.queues.size > 0 || handlesInUse.clients.size > 0 || handlesInUse.metrics.size > 0 || handlesInUse.pinoLoggers.size > 0;
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/defaults.ts
var PROCESSOR_DEFAULTS = Object.freeze({
  maxQueueSize: 2048,
  maxBatchSize: 512,
  flushIntervalMs: 5,
  writeTimeoutMs: 5e3,
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 5e3,
  maxRetryAfterMs: 6e4
});

// ../../work/main/packages/nestjs-deferred-work/src/sinks/kit/sink-config.error.ts
var SinkConfigError = class extends TypeError {
  constructor(message, option) {
    super(message);
    this.option = option;
  }
  option;
  name = "SinkConfigError";
};

// ../../work/main/packages/nestjs-deferred-work/src/sinks/memory/memory.sink.ts
var MemorySink = class {
  name;
  /** Items delivered, oldest first; trimmed back to `capacity` once it holds twice that (amortised). */
  kept = [];
  sizes = [];
  /** Items delivered since creation (or the last `clear()`), not capped by `capacity`. */
  delivered = 0;
  capacity;
  waiters = [];
  constructor(options = {}) {
    this.name = options.name ?? "memory";
    this.capacity = options.capacity ?? 1e4;
    if (!Number.isInteger(this.capacity) || this.capacity < 0) {
      throw new SinkConfigError(`MemorySink: capacity must be a whole number >= 0, got ${String(options.capacity)}.`, "capacity");
    }
  }
  /** Delivered items, oldest first: the last `capacity` of them. */
  get items() {
    if (this.kept.length > this.capacity) this.kept = this.kept.slice(this.kept.length - this.capacity);
    return this.kept;
  }
  /** Sizes of the batches written, in order (the last 1000). */
  get batchSizes() {
    if (this.sizes.length > 1e3) this.sizes = this.sizes.slice(-1e3);
    return this.sizes;
  }
  async write(batch, _context) {
    this.sizes.push(batch.length);
    if (this.sizes.length > 2e3) this.sizes = this.sizes.slice(-1e3);
    for (let i = 0; i < batch.length; i++) this.kept.push(batch[i]);
    if (this.kept.length > 2 * this.capacity) this.kept = this.kept.slice(this.kept.length - this.capacity);
    this.delivered += batch.length;
    if (this.waiters.length > 0) setImmediate(() => this.release());
  }
  /** Delivered items of one kind. */
  ofKind(kind) {
    return this.items.filter((item) => item.kind === kind);
  }
  /**
   * Resolves once `count` items in all have been delivered to this sink (counting from creation or
   * the last `clear()`); rejects after `timeoutMs` (default `5000`) with what was delivered so far.
   */
  waitFor(count, timeoutMs = 5e3) {
    if (this.delivered >= count) return Promise.resolve();
    return new Promise((resolve6, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`MemorySink "${this.name}": ${this.delivered} of ${count} items delivered after ${timeoutMs} ms.`));
      }, timeoutMs);
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve6();
        }
      };
      this.waiters.push(waiter);
    });
  }
  /** Forget what was delivered (pending `waitFor` calls keep waiting). */
  clear() {
    this.kept = [];
    this.sizes = [];
    this.delivered = 0;
  }
  release() {
    const ready = this.waiters.filter((w) => this.delivered >= w.count);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => this.delivered < w.count);
    for (const w of ready) w.resolve();
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-correlation.ts
function resolveCorrelation(option) {
  if (option === false) return void 0;
  if (option === void 0) return { requestId: requestIdOf, openTelemetry: "auto" };
  if (option === null || typeof option !== "object") {
    throw new DeferredWorkConfigError("correlation", `expected an object or false, got ${JSON.stringify(option)}`, "Pass correlation: { requestIdHeader: 'x-request-id' }, or false.");
  }
  const { requestIdHeader, requestId, openTelemetry = "auto" } = option;
  if (requestIdHeader !== void 0 && (typeof requestIdHeader !== "string" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(requestIdHeader))) {
    throw new DeferredWorkConfigError("correlation.requestIdHeader", `${JSON.stringify(requestIdHeader)} is not a header name`, "Pass a header name such as 'x-request-id'.");
  }
  if (requestId !== void 0 && typeof requestId !== "function") {
    throw new DeferredWorkConfigError("correlation.requestId", "expected a function of the request", "Pass requestId: (req) => req.id, or use requestIdHeader.");
  }
  if (requestIdHeader !== void 0 && requestId !== void 0) {
    throw new DeferredWorkConfigError("correlation", "both requestIdHeader and requestId are given", "Give one: the header to read, or the function that finds the id.");
  }
  if (openTelemetry !== true && openTelemetry !== false && openTelemetry !== "auto") {
    throw new DeferredWorkConfigError("correlation.openTelemetry", `expected true, false or 'auto', got ${JSON.stringify(openTelemetry)}`, "Leave it out for 'auto'.");
  }
  return { requestIdHeader: requestIdHeader?.toLowerCase(), requestId: requestIdHeader === void 0 ? requestId ?? requestIdOf : void 0, openTelemetry };
}
function requestIdOf(request) {
  const id = request?.id;
  return typeof id === "string" ? id : typeof id === "number" ? String(id) : void 0;
}

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/module.defaults.ts
var MODULE_DEFAULTS = Object.freeze({
  asyncContext: "auto",
  timing: false,
  shutdownTimeoutMs: 5e3,
  maxItemBytes: 1048576,
  deadLetterCapacity: 100
});

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/option-checks.ts
var NUMERIC = {
  maxQueueSize: 1,
  maxBatchSize: 1,
  flushIntervalMs: 0,
  writeTimeoutMs: 1,
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0,
  maxRetryAfterMs: 0
};
function checkNumber(option, value, min) {
  if (value === void 0) return;
  const max = option.endsWith("Ms") ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const range = max === MAX_TIMER_MS ? `between ${min} and ${MAX_TIMER_MS} (the longest a timer can wait)` : `>= ${min}`;
    throw new DeferredWorkConfigError(
      option,
      `expected a whole number ${range}, got ${typeof value === "number" ? value : JSON.stringify(value) ?? String(value)}`,
      "Pass a whole number, or leave the option out to use its default."
    );
  }
}
function checkProcessorOptions(prefix2, options) {
  if (!options) return;
  for (const key of Object.keys(NUMERIC)) {
    checkNumber(prefix2 + key, options[key], NUMERIC[key]);
  }
}
function pickProcessorOptions(source) {
  const picked = {};
  if (!source) return picked;
  for (const key of Object.keys(NUMERIC)) {
    if (source[key] !== void 0) picked[key] = source[key];
  }
  return picked;
}
function checkSinkName(option, name, sinks) {
  if (name === CALLBACK_RUNNER_NAME) {
    throw new DeferredWorkConfigError(
      option,
      `"${CALLBACK_RUNNER_NAME}" is the built-in runner of run(fn) callbacks and takes nothing else`,
      "Route to one of your sinks."
    );
  }
  if (name === void 0 || sinks.has(name)) return;
  const known = [...sinks.keys()].filter((n) => n !== CALLBACK_RUNNER_NAME);
  throw new DeferredWorkConfigError(
    option,
    `no sink is named "${name}" (configured: ${known.map((n) => `"${n}"`).join(", ") || "none"})`,
    `Add a sink with name "${name}" to "sinks", or route to one of the configured sinks.`
  );
}
function checkSinkTakes2(option, kind, name, sinks) {
  const kinds = sinks.get(name)?.kinds;
  if (!kinds || kinds.includes(kind)) return;
  const others = [...sinks.values()].filter((s) => !s.kinds || s.kinds.includes(kind)).map((s) => `"${s.name}"`);
  throw new DeferredWorkConfigError(
    option,
    `${kind} items would go to sink "${name}", which takes only ${kinds.join(", ")} items`,
    others.length > 0 ? `Route ${kind} items to a sink that takes them (${others.join(", ")}), e.g. routing: { ${kinds[0]}: '${name}', default: ${others[0].replace(/"/g, "'")} }.` : `Add a sink that takes ${kind} items (a MemorySink, an HttpSink) and route ${kind} items to it.`
  );
}
function targetNames(option, target) {
  if (target === void 0) return [];
  if (typeof target === "string") return [target];
  if (!Array.isArray(target) || target.length === 0 || target.some((name) => typeof name !== "string")) {
    throw new DeferredWorkConfigError(option, `must be a sink's name or a non-empty array of names, got ${JSON.stringify(target)}`, "E.g. 'prometheus', or ['prometheus', 'opentelemetry'] for a copy to each.");
  }
  if (new Set(target).size !== target.length) {
    throw new DeferredWorkConfigError(option, `names a sink twice (${JSON.stringify(target)})`, "List each sink once.");
  }
  return target;
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/callbacks/callback-runner.options.ts
var CALLBACK_RUNNER_DEFAULTS = Object.freeze({
  concurrency: 2048,
  maxQueueSize: 16384,
  timeoutMs: 5e3,
  maxAttempts: 1,
  initialBackoffMs: 100,
  maxBackoffMs: 5e3
});
var CALLBACK_RUNNER_MINIMUMS = Object.freeze({
  concurrency: 1,
  maxQueueSize: 0,
  timeoutMs: 1,
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0
});

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-callback-options.ts
function resolveCallbackOptions(options) {
  const own = options.callbacks;
  if (own !== void 0 && (own === null || typeof own !== "object" || Array.isArray(own))) {
    throw new DeferredWorkConfigError("callbacks", "expected an object", "Pass callbacks: { concurrency: 2048, timeoutMs: 5000 } or leave it out.");
  }
  for (const key of Object.keys(own ?? {})) {
    if (!(key in CALLBACK_RUNNER_MINIMUMS)) {
      throw new DeferredWorkConfigError(
        `callbacks.${key}`,
        "not an option of the callback runner",
        `Use ${Object.keys(CALLBACK_RUNNER_MINIMUMS).join(", ")}.`
      );
    }
  }
  const legacy = options.sinkOptions?.[CALLBACK_RUNNER_NAME] ?? {};
  const resolved = { ...CALLBACK_RUNNER_DEFAULTS };
  const fromLegacy = {
    maxQueueSize: legacy.maxQueueSize,
    timeoutMs: legacy.writeTimeoutMs,
    maxAttempts: legacy.maxAttempts,
    initialBackoffMs: legacy.initialBackoffMs,
    maxBackoffMs: legacy.maxBackoffMs
  };
  for (const key of Object.keys(CALLBACK_RUNNER_MINIMUMS)) {
    const value = own?.[key] ?? fromLegacy[key];
    checkNumber(own?.[key] !== void 0 ? `callbacks.${key}` : `sinkOptions.callbacks`, value, CALLBACK_RUNNER_MINIMUMS[key]);
    if (value !== void 0) resolved[key] = value;
  }
  return resolved;
}

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-spools.ts
var import_node_path6 = require("node:path");
function checkSpool(option, spool) {
  if (spool === void 0 || spool === false) return;
  const dir = spool?.dir;
  if (typeof spool !== "object" || spool === null || typeof dir !== "string" || dir.trim() === "") {
    throw new DeferredWorkConfigError(
      option,
      "expected { dir, maxBytes?, syncIntervalMs?, segmentBytes? } with a non-empty dir",
      `Pass ${option}: { dir: '/var/lib/my-app/spool' } (a directory on a persistent disk), or false for no spool.`
    );
  }
}
function sinkDir(dir, name) {
  return (0, import_node_path6.resolve)(dir, encodeURIComponent(name).replace(/^\.+/, (dots) => "%2E".repeat(dots.length)));
}
function resolveSpools(options, sinks, _processorOptions, maxItemBytes) {
  checkSpool("spool", options.spool);
  const spools = /* @__PURE__ */ new Map();
  const owners = /* @__PURE__ */ new Map();
  for (const name of sinks.keys()) {
    const own = options.sinkOptions?.[name]?.spool;
    checkSpool(`sinkOptions.${name}.spool`, own);
    const chosen = own ?? options.spool;
    if (!chosen) continue;
    const option = own ? `sinkOptions.${name}.spool` : "spool";
    const { dir, ...rest } = chosen;
    const resolved = resolveSpoolOptions(rest, option);
    const largest = maxItemBytes + 16 * 1024;
    if (rest.segmentBytes !== void 0 && resolved.segmentBytes < largest) {
      throw new DeferredWorkConfigError(
        `${option}.segmentBytes`,
        `${resolved.segmentBytes} bytes cannot hold an item of maxItemBytes (${maxItemBytes}) with its fields`,
        `Make segmentBytes at least maxItemBytes + 16384 (${largest}), or lower maxItemBytes.`
      );
    }
    if (resolved.maxBytes < largest) {
      throw new DeferredWorkConfigError(
        `${option}.maxBytes`,
        `${resolved.maxBytes} bytes cannot hold an item of maxItemBytes (${maxItemBytes}) with its fields`,
        `Make maxBytes at least maxItemBytes + 16384 (${largest}), or lower maxItemBytes to at most maxBytes - 16384 (${resolved.maxBytes - 16384}).`
      );
    }
    const path = own ? (0, import_node_path6.resolve)(dir) : sinkDir(dir, name);
    const other = owners.get(path);
    if (other !== void 0) {
      throw new DeferredWorkConfigError(
        option,
        `sinks "${other}" and "${name}" would share the spool directory ${path}`,
        "Give each sink its own directory (one spool per sink and process)."
      );
    }
    owners.set(path, name);
    const explicit = options.sinkOptions?.[name]?.maxAttempts ?? options.maxAttempts;
    spools.set(name, { dir: path, ...resolved, requeue: explicit === void 0, source: { option: `${option}.dir`, given: dir } });
  }
  return spools;
}

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-dead-letters.ts
var import_node_path7 = require("node:path");

// ../../work/main/packages/nestjs-deferred-work/src/core/dead-letter-filter.ts
function matchesDeadLetterFilter(record, filter) {
  if (filter.sink !== void 0 && record.sink !== filter.sink) return false;
  if (filter.reason !== void 0 && record.reason !== filter.reason) return false;
  if (filter.from !== void 0 && record.at < filter.from) return false;
  if (filter.to !== void 0 && record.at >= filter.to) return false;
  return true;
}

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/dead-letter-index.ts
var PAGE_DEFAULT = 100;
var PAGE_MAX = 1e3;
var DeadLetterIndex = class {
  constructor(bounds, onLeave = () => {
  }) {
    this.bounds = bounds;
    this.onLeave = onLeave;
  }
  bounds;
  onLeave;
  held = /* @__PURE__ */ new Map();
  order = 0;
  bytes = 0;
  get size() {
    return this.held.size;
  }
  /** Keeps a record (replacing one with its id), then evicts the oldest past the bounds. Returns the records evicted. */
  put(record, bytes, tag) {
    this.delete(record.id);
    this.held.set(record.id, { record, order: ++this.order, bytes, tag });
    this.bytes += bytes;
    return this.evict(Date.now());
  }
  get(id) {
    return this.held.get(id)?.record;
  }
  delete(id) {
    const held2 = this.held.get(id);
    if (!held2) return false;
    this.held.delete(id);
    this.bytes -= held2.bytes;
    this.onLeave(held2.tag);
    return true;
  }
  /** Drops the oldest records while a bound is passed (one is always kept if it alone is too large, until a newer one comes). */
  evict(now) {
    let evicted = 0;
    for (const [id, held2] of this.held) {
      const over = this.held.size > this.bounds.maxCount || this.bytes > this.bounds.maxBytes || now - held2.record.at > this.bounds.maxAgeMs;
      if (!over) break;
      this.delete(id);
      evicted++;
    }
    return evicted;
  }
  /** Drops the oldest record, if any (the file store, when its spool is full). */
  evictOldest() {
    const first = this.held.keys().next();
    return first.done ? false : this.delete(first.value);
  }
  list(query) {
    this.evict(Date.now());
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? PAGE_DEFAULT)), PAGE_MAX);
    const after = query.after === void 0 ? 0 : Number(query.after);
    const records = [];
    let last = 0;
    for (const held2 of this.held.values()) {
      if (held2.order <= after || !matchesDeadLetterFilter(held2.record, query)) continue;
      if (records.length === limit) return { records, next: String(last) };
      records.push(held2.record);
      last = held2.order;
    }
    return { records };
  }
  count(filter) {
    this.evict(Date.now());
    let count = 0;
    for (const held2 of this.held.values()) if (matchesDeadLetterFilter(held2.record, filter)) count++;
    return count;
  }
  remove(ids) {
    let removed = 0;
    for (const id of ids) if (this.delete(id)) removed++;
    return removed;
  }
  purge(filter) {
    const ids = [];
    for (const [id, held2] of this.held) if (matchesDeadLetterFilter(held2.record, filter)) ids.push(id);
    return this.remove(ids);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/indexed-dead-letter.store.ts
var IndexedDeadLetterStore = class {
  list(query) {
    return this.index.list(query);
  }
  get(id) {
    return this.index.get(id);
  }
  count(filter) {
    return this.index.count(filter);
  }
  remove(ids) {
    return this.index.remove(ids);
  }
  purge(filter) {
    return this.index.purge(filter);
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/file-dead-letter.store.ts
var FileDeadLetterStore = class extends IndexedDeadLetterStore {
  constructor(options) {
    super();
    this.options = options;
    this.description = `file (${options.dir})`;
    this.index = new DeadLetterIndex(options, (seq) => {
      if (seq !== void 0 && this.spool) this.spool.ack(seq);
    });
  }
  options;
  description;
  spool;
  index;
  /** Records the spool refused (full disk), kept in memory only. */
  refused = 0;
  /** Opens the spool (taking its lock) and reads back what a previous process left. */
  open() {
    if (this.spool) return;
    const segmentBytes = Math.max(4 * 1024 * 1024, this.options.maxRecordBytes + 64 * 1024);
    this.spool = Spool.open(this.options.dir, {
      segmentBytes,
      // Room for the records kept, plus acked ones whose segment is not deleted yet.
      maxBytes: this.options.maxBytes + 2 * segmentBytes,
      syncIntervalMs: this.options.syncIntervalMs ?? 200
    });
    const stale = [];
    for (const { seq, payload } of this.spool.replay()) {
      let record;
      try {
        record = JSON.parse(payload.toString("utf8"));
      } catch {
        stale.push(seq);
        continue;
      }
      this.index.put(record, payload.length, seq);
    }
    if (stale.length > 0) this.spool.ack(stale);
  }
  add(records) {
    const spool = this.spool;
    if (!spool) throw new Error(`the dead-letter store in ${this.options.dir} is not open`);
    for (const record of records) {
      const json = serializeRecord(record);
      const bytes = Buffer.byteLength(json, "utf8");
      this.index.put(record, bytes, this.append(spool, json));
    }
    spool.writeNow();
  }
  /** Appends a record; when the spool is full, drops the oldest records to make room. `undefined`: kept in memory only. */
  append(spool, json) {
    for (; ; ) {
      try {
        return spool.append(json);
      } catch (error) {
        if (!(error instanceof SpoolFullError) || error.reason !== "max-bytes" || !this.index.evictOldest()) {
          this.refused++;
          if (error instanceof SpoolFullError || error instanceof RangeError) return void 0;
          throw error;
        }
      }
    }
  }
  /** Waits until what was added and removed so far is fsynced. */
  synced() {
    return this.spool?.synced() ?? Promise.resolve();
  }
  async close() {
    const spool = this.spool;
    this.spool = void 0;
    await spool?.close();
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/pipeline/dead-letters/memory-dead-letter.store.ts
var MemoryDeadLetterStore = class extends IndexedDeadLetterStore {
  description = "memory";
  /** @internal */
  index;
  constructor(bounds) {
    super();
    this.index = new DeadLetterIndex(bounds);
  }
  add(records) {
    for (const record of records) this.index.put(record, recordBytes(record));
  }
};

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-dead-letters.ts
var DEAD_LETTER_DEFAULTS = Object.freeze({
  maxCount: 1e4,
  maxBytes: 64 * 1024 * 1024,
  maxAgeMs: 7 * 24 * 3600 * 1e3,
  redrivePerSecond: 100
});
var STORE_METHODS = ["add", "list", "get", "count", "remove", "purge"];
function resolveDeadLetters(options, sinks, maxItemBytes) {
  const given = options.deadLetter;
  const object = typeof given === "object" && given !== null ? given : { forward: given };
  if (given === null || typeof given !== "object" && typeof given !== "function" && typeof given !== "string" && given !== void 0) {
    throw new DeferredWorkConfigError("deadLetter", "expected a function or a sink name", "Pass deadLetter: (letters) => { ... } or the name of a configured sink.");
  }
  const forward = object.forward;
  const forwardOption = typeof given === "object" ? "deadLetter.forward" : "deadLetter";
  if (typeof forward === "string") checkSinkName(forwardOption, forward, sinks);
  else if (forward !== void 0 && typeof forward !== "function") {
    throw new DeferredWorkConfigError(forwardOption, "expected a function or a sink name", `Pass ${forwardOption}: (letters) => { ... } or the name of a configured sink.`);
  }
  checkNumber("deadLetter.maxCount", object.maxCount, 1);
  checkNumber("deadLetter.maxBytes", object.maxBytes, 1);
  checkNumber("deadLetter.redrivePerSecond", object.redrivePerSecond, 1);
  const maxAgeMs = object.maxAgeMs ?? DEAD_LETTER_DEFAULTS.maxAgeMs;
  if (typeof maxAgeMs !== "number" || !Number.isInteger(maxAgeMs) || maxAgeMs < 1) {
    throw new DeferredWorkConfigError("deadLetter.maxAgeMs", `expected a whole number >= 1, got ${JSON.stringify(maxAgeMs)}`, "Pass an age in milliseconds, or leave it out for 7 days.");
  }
  const bounds = {
    maxCount: object.maxCount ?? DEAD_LETTER_DEFAULTS.maxCount,
    maxBytes: object.maxBytes ?? DEAD_LETTER_DEFAULTS.maxBytes,
    maxAgeMs
  };
  return {
    deadLetter: forward,
    deadLetterStore: buildStore(object, options, bounds, maxItemBytes),
    redrivePerSecond: object.redrivePerSecond ?? DEAD_LETTER_DEFAULTS.redrivePerSecond
  };
}
function buildStore(object, options, bounds, maxItemBytes) {
  const spoolDir = options.spool ? options.spool.dir : void 0;
  const store = object.store ?? (spoolDir !== void 0 || object.dir !== void 0 ? "file" : "memory");
  if (store === false) return void 0;
  if (store === "memory") return new MemoryDeadLetterStore(bounds);
  if (store === "file") {
    const dir = object.dir ?? (spoolDir === void 0 ? void 0 : (0, import_node_path7.resolve)(spoolDir, ".dead-letters"));
    if (typeof dir !== "string" || dir.trim() === "") {
      throw new DeferredWorkConfigError(
        "deadLetter.dir",
        "the 'file' store needs a directory and no module-wide spool gives one",
        "Pass deadLetter: { store: 'file', dir: '/var/lib/my-app/dead-letters' } (a persistent disk), or configure spool: { dir }."
      );
    }
    return new FileDeadLetterStore({ dir: (0, import_node_path7.resolve)(dir), ...bounds, maxRecordBytes: maxItemBytes + 64 * 1024 });
  }
  if (typeof store === "object" && store !== null && STORE_METHODS.every((method) => typeof store[method] === "function")) return store;
  throw new DeferredWorkConfigError(
    "deadLetter.store",
    `expected 'memory', 'file', false or a DeadLetterStore (an object with ${STORE_METHODS.join(", ")}), got ${typeof store === "object" ? "an object without them" : JSON.stringify(store)}`,
    "Pass store: 'file' (durable), 'memory', or an instance of your own class implementing DeadLetterStore."
  );
}

// ../../work/main/packages/nestjs-deferred-work/src/nest/options/resolve-options.ts
function resolveOptions(options = {}) {
  checkProcessorOptions("", options);
  checkNumber("shutdownTimeoutMs", options.shutdownTimeoutMs, 0);
  checkNumber("maxItemBytes", options.maxItemBytes, 1);
  checkNumber("deadLetterCapacity", options.deadLetterCapacity, 0);
  if (options.sinks !== void 0 && !Array.isArray(options.sinks)) {
    throw new DeferredWorkConfigError("sinks", "expected an array of sinks", "Pass sinks: [new MemorySink(), ...].");
  }
  const configured = options.sinks && options.sinks.length > 0 ? options.sinks : [new MemorySink()];
  const sinks = /* @__PURE__ */ new Map();
  configured.forEach((sink2, index) => {
    if (!sink2 || typeof sink2.name !== "string" || sink2.name === "" || typeof sink2.write !== "function") {
      throw new DeferredWorkConfigError(
        `sinks[${index}]`,
        'not a sink (a sink has a non-empty string "name" and a "write(batch, { signal })" method)',
        "Pass an instance of MemorySink, HttpSink, BullSink or your own class implementing DeferredSink."
      );
    }
    if (sink2.name === CALLBACK_RUNNER_NAME) {
      throw new DeferredWorkConfigError(
        `sinks[${index}].name`,
        `"${CALLBACK_RUNNER_NAME}" is reserved for the built-in runner of run(fn) callbacks`,
        "Give the sink another name."
      );
    }
    if (sinks.has(sink2.name)) {
      throw new DeferredWorkConfigError(
        `sinks[${index}].name`,
        `two sinks are named "${sink2.name}"`,
        'Give each sink a unique name (most sinks take a "name" option).'
      );
    }
    sinks.set(sink2.name, sink2);
  });
  const first = configured[0].name;
  const routingIn = options.routing ?? {};
  for (const key of Object.keys(routingIn)) {
    if (key !== "default" && !isSinkKind(key)) {
      throw new DeferredWorkConfigError(
        `routing.${key}`,
        `"${key}" is not a kind of item`,
        'Route "job", "log", "metric" or "default".'
      );
    }
    for (const name of targetNames(`routing.${key}`, routingIn[key])) checkSinkName(`routing.${key}`, name, sinks);
  }
  const routing = {};
  for (const kind of SINK_KINDS) {
    const chosen = routingIn[kind] ?? routingIn.default;
    if (chosen !== void 0) {
      for (const name of targetNames("routing", chosen)) checkSinkTakes2(routingIn[kind] ? `routing.${kind}` : "routing.default", kind, name, sinks);
      routing[kind] = typeof chosen === "string" || chosen.length > 1 ? chosen : chosen[0];
    } else {
      routing[kind] = [...sinks.values()].find((sink2) => !sink2.kinds || sink2.kinds.includes(kind))?.name ?? first;
    }
  }
  const when = { ...WHEN_DEFAULTS };
  for (const [kind, value] of Object.entries(options.when ?? {})) {
    if (!isDeferredKind(kind)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${kind}" is not a kind of item`, `Use one of ${DEFERRED_KINDS.join(", ")}.`);
    }
    if (!isRunWhen(value)) {
      throw new DeferredWorkConfigError(`when.${kind}`, `"${String(value)}" is not a condition`, `Use one of ${RUN_WHENS.join(", ")}.`);
    }
    when[kind] = value;
  }
  const processorOptions = /* @__PURE__ */ new Map();
  for (const [name, perSink] of Object.entries(options.sinkOptions ?? {})) {
    if (name !== CALLBACK_RUNNER_NAME) checkSinkName(`sinkOptions.${name}`, name, sinks);
    checkProcessorOptions(`sinkOptions.${name}.`, perSink);
  }
  const globals = pickProcessorOptions(options);
  for (const [name, sink2] of sinks) {
    const resolved = {
      ...PROCESSOR_DEFAULTS,
      ...globals,
      ...pickProcessorOptions(sink2.defaults),
      ...pickProcessorOptions(options.sinkOptions?.[name])
    };
    if (resolved.maxBatchSize > resolved.maxQueueSize) {
      throw new DeferredWorkConfigError(
        options.sinkOptions?.[name] ? `sinkOptions.${name}.maxBatchSize` : "maxBatchSize",
        `maxBatchSize (${resolved.maxBatchSize}) is larger than maxQueueSize (${resolved.maxQueueSize}) for sink "${name}"`,
        "Make maxBatchSize at most maxQueueSize."
      );
    }
    processorOptions.set(name, resolved);
  }
  const maxItemBytes = options.maxItemBytes ?? MODULE_DEFAULTS.maxItemBytes;
  const spools = resolveSpools(options, sinks, processorOptions, maxItemBytes);
  return {
    sinks,
    routing,
    processorOptions,
    spools,
    callbacks: resolveCallbackOptions(options),
    when,
    asyncContext: resolveAsyncContext(options.asyncContext ?? MODULE_DEFAULTS.asyncContext),
    timing: options.timing ?? MODULE_DEFAULTS.timing,
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? MODULE_DEFAULTS.shutdownTimeoutMs,
    maxItemBytes,
    ...resolveDeadLetters(options, sinks, maxItemBytes),
    deadLetterCapacity: options.deadLetterCapacity ?? MODULE_DEFAULTS.deadLetterCapacity,
    correlation: resolveCorrelation(options.correlation)
  };
}
function resolveAsyncContext(value) {
  if (value === "auto") return anyHandleInUse();
  if (typeof value !== "boolean") {
    throw new DeferredWorkConfigError("asyncContext", `must be true, false or 'auto', got ${JSON.stringify(value)}`, "Leave it out for 'auto'.");
  }
  return value;
}

// proc.ts
var sink = new MemorySink({ name: "memory", capacity: 1e3 });
var d = new Dispatcher(resolveOptions({ sinks: [sink], flushIntervalMs: 0 }));
d.start();
var fields = { orderId: "o-1", total: 99.5 };
function items() {
  const now = Date.now();
  return [
    { kind: "job", queue: "orders", name: "confirm", data: { orderId: "o-1" }, when: "always", createdAt: now },
    { kind: "log", level: "info", message: "order accepted", fields, when: "always", createdAt: now },
    { kind: "log", level: "info", message: "order stored", fields, when: "always", createdAt: now },
    { kind: "metric", name: "orders_total", value: 1, tags: { channel: "web" }, when: "always", createdAt: now },
    { kind: "metric", name: "order_value", value: 99.5, tags: { channel: "web" }, when: "always", createdAt: now }
  ];
}
async function run(n) {
  let cpu = 0;
  for (let i = 0; i < n; i++) {
    const t0 = process.cpuUsage();
    for (const it of items()) d.dispatch(it);
    const before = sink.delivered;
    await new Promise((r) => setTimeout(r, 2));
    const t = process.cpuUsage(t0);
    cpu += t.user + t.system;
    if (sink.delivered !== before + 5) throw new Error("not delivered " + (sink.delivered - before));
  }
  return cpu / n;
}
(async () => {
  await run(500);
  const out = [];
  for (let r = 0; r < 5; r++) out.push((await run(1500)).toFixed(1));
  console.log("\xB5s per request of 5 items, one write each (incl. a 2 ms timer wait):", out.join(" "));
  process.exit(0);
})();
