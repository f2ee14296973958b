import { BadRequestException, Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DeadLetterStoreMissingError } from '../core/errors/dead-letter-store-missing.error';
import type { DeferredItem } from '../core/items/deferred-item.interface';
import type { ResolvedDeferredWorkOptions } from '../pipeline/resolved-options.interface';
import { RESOLVED_DEFERRED_WORK_OPTIONS } from '../nest/deferred-work.module-definition';
import { DeferredWork } from '../nest/deferred-work.service';
import { fieldsOf, filterOfFields } from './console-filter';
import { type ConsoleRequest, cookieToken, newToken, pathOf, rootHref, send } from './console-http';
import type { ResolvedConsoleOptions } from './console-options';
import { StatsHistory } from './stats-history';
import { detailContent, listContent } from './views/dead-letters.view';
import { html, type HtmlValue } from './views/html';
import { layout, type PageContext } from './views/layout';
import { overviewFragment } from './views/overview.view';
import { routesContent } from './views/routes.view';

/** @internal Injection token of the console's resolved options. */
export const CONSOLE_OPTIONS = Symbol('nestjs-deferred-work.console-options');

const HTML = 'text/html; charset=utf-8';
const PAYLOAD_LIMIT = 64 * 1024;
/** What the `root` of a fragment request may be: a relative link made by `rootHref`. */
const ROOT_LINK = /^(\.\/([A-Za-z0-9._~-]+\/)?|(\.\.\/)+)$/;

/**
 * @internal
 * The console's pages (GET): the overview and its live part, the routes, the dead-letter list and one
 * record. Samples `stats()` for the sparklines from bootstrap until the module is destroyed.
 */
@Injectable()
export class ConsolePages implements OnModuleInit, OnModuleDestroy {
  readonly history: StatsHistory;
  private readonly budgets: Map<string, number>;

  constructor(
    @Inject(DeferredWork) readonly work: DeferredWork,
    @Inject(CONSOLE_OPTIONS) readonly options: ResolvedConsoleOptions,
    @Inject(RESOLVED_DEFERRED_WORK_OPTIONS) private readonly module: ResolvedDeferredWorkOptions,
  ) {
    this.history = new StatsHistory(() => work.stats(), options.sampleIntervalMs);
    this.budgets = new Map([...module.processorOptions].map(([name, o]) => [name, o.maxQueueBytes]));
  }

  onModuleInit(): void {
    this.history.start();
  }

  onModuleDestroy(): void {
    this.history.stop();
  }

  /** The page's context; sets the CSRF cookie when the browser has none yet. */
  context(request: ConsoleRequest, depth: number, headers: Record<string, string>): PageContext {
    let token = cookieToken(request);
    if (!token) {
      const made = newToken(request, this.options);
      token = made.token;
      headers['Set-Cookie'] = made.cookie;
    }
    return { root: rootHref(pathOf(request), depth), instance: this.options.instance, token };
  }

  /** Sends a whole page. */
  page(request: ConsoleRequest, response: unknown, depth: number, title: string, tab: 'overview' | 'routes' | 'dead-letters', content: (ctx: PageContext) => HtmlValue, status = 200): void {
    const headers: Record<string, string> = {};
    const ctx = this.context(request, depth, headers);
    send(response, status, HTML, layout(ctx, title, tab, content(ctx)).text, headers);
  }

  overview(request: ConsoleRequest, response: unknown): void {
    this.page(request, response, 0, 'Overview', 'overview', (ctx) => {
      const src = `${ctx.root}overview/fragment?root=${encodeURIComponent(ctx.root)}`;
      return html`<h2>Sinks</h2>
<p class="refresh-status" data-field="refresh-status" aria-live="polite"></p>
<section id="live" data-refresh="${src}" data-refresh-ms="${this.options.refreshMs}">${overviewFragment(ctx.root, this.work.stats(), this.history, this.budgets)}</section>`;
    });
  }

  /** The overview's live part alone, for the page's refresh; its links relative to the page (`root`). */
  fragment(request: ConsoleRequest, response: unknown, root: unknown): void {
    const link = typeof root === 'string' && ROOT_LINK.test(root) ? root : '../';
    send(response, 200, HTML, overviewFragment(link, this.work.stats(), this.history, this.budgets).text);
  }

  /** The overview's data as JSON: `stats()`, the rates of the last minute, the instance. */
  json(response: unknown): void {
    const now = Date.now();
    const stats = this.work.stats();
    const rates: Record<string, { deliveredPerMin?: number; failedWritesPerMin?: number }> = {};
    for (const [name, s] of Object.entries(stats.sinks)) {
      rates[name] = {
        deliveredPerMin: this.history.rateOverLastMinute(name, 'delivered', s.delivered, now),
        failedWritesPerMin: this.history.rateOverLastMinute(name, 'failedWrites', s.failedWrites, now),
      };
    }
    send(response, 200, 'application/json; charset=utf-8', JSON.stringify({ instance: this.options.instance, at: now, stats, rates }));
  }

  routes(request: ConsoleRequest, response: unknown): void {
    this.page(request, response, 1, 'Routes', 'routes', () => routesContent(this.work.stats(), this.module.timing));
  }

  /** Sink names for the list's filter: those of the module, the callback runner's too. */
  sinkNames(): string[] {
    return Object.keys(this.work.stats().sinks);
  }

  async list(request: ConsoleRequest, response: unknown): Promise<void> {
    const query = request.query ?? {};
    const fields = fieldsOf(query);
    const after = typeof query.after === 'string' && query.after !== '' ? query.after : undefined;
    await this.guarded(request, response, 1, async () => {
      const filter = filterOfFields(fields);
      const [count, page] = await Promise.all([this.work.countDeadLetters(filter), this.work.listDeadLetters({ ...filter, limit: this.options.pageSize, after })]);
      this.page(request, response, 1, 'Dead letters', 'dead-letters', (ctx) => listContent(ctx, fields, this.sinkNames(), count, page, after));
    });
  }

  async record(request: ConsoleRequest, response: unknown): Promise<void> {
    const id = request.query?.id;
    await this.guarded(request, response, 2, async () => {
      if (typeof id !== 'string' || id === '') throw new BadRequestException('Give the dead letter\'s id: dead-letters/record?id=<item id>:<sink>');
      const record = await this.work.getDeadLetter(id);
      if (!record) {
        this.problem(request, response, 2, 404, `No dead letter has the id ${JSON.stringify(id)}: it was redriven, discarded or purged, or aged out of the store.`);
        return;
      }
      const { text, note } = this.payloadOf(record.item);
      this.page(request, response, 2, 'Dead letter', 'dead-letters', (ctx) => detailContent(ctx, record, text, note, this.options.traceUrl));
    });
  }

  /** What may be shown of an item's payload: `redact(item)`'s value, else the payload with `showPayloads`, else a note. */
  payloadOf(item: DeferredItem): { text?: string; note: string } {
    let shown: unknown;
    if (this.options.redact) {
      try {
        shown = this.options.redact(item);
      } catch (error) {
        return { note: `Hidden: the redact option threw (${(error as Error)?.message ?? String(error)}).` };
      }
      if (shown === undefined) return { note: 'Hidden by the redact option.' };
    } else if (!this.options.showPayloads) {
      return { note: 'Hidden: payloads are shown only with showPayloads: true, or what a redact(item) function returns.' };
    } else {
      shown = item.kind === 'job' ? { data: item.data, opts: item.opts } : item.kind === 'log' ? { message: item.message, fields: item.fields } : item.kind === 'metric' ? { value: item.value, tags: item.tags } : undefined;
    }
    let text: string;
    try {
      text = JSON.stringify(shown, null, 2) ?? 'undefined';
    } catch (error) {
      return { note: `Cannot be shown as JSON: ${(error as Error).message}` };
    }
    return { text: text.length > PAYLOAD_LIMIT ? `${text.slice(0, PAYLOAD_LIMIT)}\n… (${text.length - PAYLOAD_LIMIT} more characters)` : text, note: '' };
  }

  /** Runs a page's work; a bad filter (400) or a missing store becomes a page saying how to fix it. */
  async guarded(request: ConsoleRequest, response: unknown, depth: number, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (error instanceof BadRequestException) this.problem(request, response, depth, 400, error.message);
      else if (error instanceof DeadLetterStoreMissingError) this.problem(request, response, depth, 409, error.message);
      else throw error;
    }
  }

  /** A page that says what went wrong (and how to fix it). */
  problem(request: ConsoleRequest, response: unknown, depth: number, status: number, message: string): void {
    this.page(request, response, depth, 'Problem', 'dead-letters', (ctx) => html`<h2>Cannot do that</h2><p class="error" data-field="problem">${message}</p><p><a href="${ctx.root}dead-letters">Back to the list</a></p>`, status);
  }
}
