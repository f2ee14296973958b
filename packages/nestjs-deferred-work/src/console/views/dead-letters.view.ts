import type { DeadLetterPage, DeadLetterRecord } from '../../core/dead-letter-store.interface';
import type { DeferredItem } from '../../core/items/deferred-item.interface';
import { type FilterFields, describeFields, queryOfFields, REASONS } from '../console-filter';
import { html, type SafeHtml, utc } from './html';
import { type PageContext, tokenField } from './layout';

/** @internal An item in a few words, without its payload: its kind and where it goes. */
export function summaryOf(item: DeferredItem): string {
  switch (item.kind) {
    case 'job':
      return `job ${item.queue} / ${item.name}`;
    case 'log':
      return `log ${item.level}${item.context ? ` (${item.context})` : ''}`;
    case 'metric':
      return `metric ${item.name}`;
    default:
      return 'callback';
  }
}

/** The filter's fields as hidden inputs (a form that acts on what the list shows). */
function hiddenFilter(fields: FilterFields): SafeHtml {
  return html`${(Object.keys(fields) as Array<keyof FilterFields>).map((name) => html`<input type="hidden" name="${name}" value="${fields[name]}">`)}`;
}

function filterForm(ctx: PageContext, fields: FilterFields, sinks: readonly string[]): SafeHtml {
  const option = (value: string, selected: string, label = value) => html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
  return html`<form class="filter" method="get" action="${ctx.root}dead-letters">
<label>Sink <select name="sink">${option('', fields.sink, 'any')}${sinks.map((s) => option(s, fields.sink))}${
    fields.sink !== '' && !sinks.includes(fields.sink) ? option(fields.sink, fields.sink) : ''
  }</select></label>
<label>Reason <select name="reason">${option('', fields.reason, 'any')}${REASONS.map((r) => option(r, fields.reason))}</select></label>
<label>Error code <input name="code" value="${fields.code}" placeholder="e.g. ECONNREFUSED" size="14"></label>
<label>From (UTC) <input type="datetime-local" name="from" value="${fields.from}"></label>
<label>To (UTC) <input type="datetime-local" name="to" value="${fields.to}"></label>
<button type="submit">Filter</button> <a href="${ctx.root}dead-letters">Clear</a>
</form>`;
}

/** @internal The dead-letter list: the filter, the matching count, bulk actions, one page, its selection actions. */
export function listContent(ctx: PageContext, fields: FilterFields, sinks: readonly string[], count: number, page: DeadLetterPage, after: string | undefined): SafeHtml {
  const rows = page.records.map(
    (r) => html`<tr data-id="${r.id}">
<td><input type="checkbox" name="id" value="${r.id}" form="selected" aria-label="select ${r.id}"></td>
<td><time datetime="${utc(r.at)}">${utc(r.at)}</time></td>
<td>${r.sink}</td>
<td>${r.reason}</td>
<td><code>${r.code ?? ''}</code></td>
<td class="num">${r.attempts}</td>
<td class="num">${r.redrives}</td>
<td>${summaryOf(r.item)}</td>
<td class="message">${(r.error ?? '').slice(0, 160)}</td>
<td><a href="${ctx.root}dead-letters/record?id=${encodeURIComponent(r.id)}">details</a></td>
</tr>`,
  );
  const next = page.next === undefined ? '' : html`<a rel="next" href="${ctx.root}dead-letters${queryOfFields(fields, { after: page.next })}">Next page</a>`;
  const first = after === undefined ? '' : html`<a href="${ctx.root}dead-letters${queryOfFields(fields)}">First page</a>`;
  return html`<h2>Dead letters</h2>
${filterForm(ctx, fields, sinks)}
<p class="summary"><strong data-field="matching">${count}</strong> dead letter${count === 1 ? '' : 's'} match (${describeFields(fields)}).</p>
<div class="bulk">
<form method="post" action="${ctx.root}dead-letters/redrive">${tokenField(ctx)}${hiddenFilter(fields)}<input type="hidden" name="scope" value="filter"><button type="submit" data-action="redrive-all"${count === 0 ? html` disabled` : ''}>Redrive all ${count} matching…</button></form>
<form method="post" action="${ctx.root}dead-letters/purge">${tokenField(ctx)}${hiddenFilter(fields)}<button type="submit" class="danger" data-action="purge-all"${count === 0 ? html` disabled` : ''}>Purge all ${count} matching…</button></form>
</div>
<form id="selected" method="post" action="${ctx.root}dead-letters/redrive">${tokenField(ctx)}${hiddenFilter(fields)}<input type="hidden" name="scope" value="ids">
<button type="submit" data-action="redrive-selected">Redrive selected</button>
<button type="submit" class="danger" data-action="discard-selected" formaction="${ctx.root}dead-letters/discard" data-confirm="Discard the selected dead letters? They are deleted, not redriven.">Discard selected</button>
</form>
<table class="dead-letters">
<thead><tr><th scope="col"><input type="checkbox" data-select-all aria-label="select every dead letter on this page"></th><th scope="col">Dead-lettered (UTC)</th><th scope="col">Sink</th><th scope="col">Reason</th><th scope="col">Code</th><th scope="col">Attempts</th><th scope="col">Redrives</th><th scope="col">Item</th><th scope="col">Last error</th><th scope="col"></th></tr></thead>
<tbody data-field="rows">${rows.length > 0 ? rows : html`<tr><td colspan="10" class="empty">None on this page.</td></tr>`}</tbody>
</table>
<p class="paging">${first} ${next}</p>`;
}

function errorOf(label: string, error: DeadLetterRecord['firstError']): SafeHtml {
  if (!error) return html`<dt>${label}</dt><dd>none</dd>`;
  return html`<dt>${label}</dt><dd><code>${error.code ?? 'no code'}</code> ${error.message} <span class="sub">at <time datetime="${utc(error.at)}">${utc(error.at)}</time></span></dd>`;
}

/** @internal One dead letter: its history, its correlation, its payload as allowed, and the actions on it. */
export function detailContent(ctx: PageContext, record: DeadLetterRecord, payload: string | undefined, payloadNote: string, traceUrl: string | undefined): SafeHtml {
  const correlation = record.item.correlation;
  const traceId = correlation?.traceId;
  const trace = traceId === undefined ? 'none' : traceUrl ? html`<a href="${traceUrl.split('{traceId}').join(encodeURIComponent(traceId))}" rel="noreferrer">${traceId}</a>` : traceId;
  const idField = html`<input type="hidden" name="id" value="${record.id}"><input type="hidden" name="scope" value="ids">`;
  return html`<h2>Dead letter <code>${record.id}</code></h2>
<dl class="record">
<dt>Sink</dt><dd>${record.sink}</dd>
<dt>Reason</dt><dd>${record.reason}</dd>
<dt>Item</dt><dd>${summaryOf(record.item)}, created <time datetime="${utc(record.item.createdAt)}">${utc(record.item.createdAt)}</time></dd>
<dt>Attempts</dt><dd data-field="attempts">${record.attempts}</dd>
<dt>Redrives</dt><dd data-field="redrives">${record.redrives}</dd>
<dt>First dead-lettered</dt><dd><time datetime="${utc(record.firstAt)}">${utc(record.firstAt)}</time></dd>
<dt>Last dead-lettered</dt><dd><time datetime="${utc(record.at)}">${utc(record.at)}</time></dd>
${errorOf('First error', record.firstError)}
${errorOf('Last error', record.lastError)}
<dt>Request id</dt><dd data-field="requestId">${correlation?.requestId ?? 'none'}</dd>
<dt>Trace id</dt><dd data-field="traceId">${trace}</dd>
</dl>
<h3>Payload</h3>
${payload === undefined ? html`<p class="note" data-field="payload-hidden">${payloadNote}</p>` : html`<pre data-field="payload">${payload}</pre>`}
<div class="bulk">
<form method="post" action="${ctx.root}dead-letters/redrive">${tokenField(ctx)}${idField}<button type="submit" data-action="redrive-one">Redrive</button></form>
<form method="post" action="${ctx.root}dead-letters/discard">${tokenField(ctx)}${idField}<button type="submit" class="danger" data-action="discard-one" data-confirm="Discard this dead letter? It is deleted, not redriven.">Discard</button></form>
</div>
<p><a href="${ctx.root}dead-letters">Back to the list</a></p>`;
}

/** @internal The page before a bulk action: what it would do (a dry run's count), and the button that does it. */
export function confirmContent(ctx: PageContext, action: 'redrive' | 'purge', fields: FilterFields, matched: number, would: number, skipped: Array<{ id: string; reason: string }>): SafeHtml {
  const reasons = new Map<string, number>();
  for (const s of skipped) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
  const verb = action === 'redrive' ? 'Redrive' : 'Purge';
  return html`<h2>${verb} ${would} dead letter${would === 1 ? '' : 's'}?</h2>
<p data-field="dry-run"><strong data-field="matched">${matched}</strong> match (${describeFields(fields)}); <strong data-field="would">${would}</strong> would be ${action === 'redrive' ? 'handed back to their sink' : 'deleted, not redriven'}${
    skipped.length > 0 ? html`; <strong data-field="skipped">${skipped.length}</strong> would be left: ${[...reasons].map(([reason, n]) => `${n} (${reason})`).join(', ')}` : ''
  }.</p>
<form method="post" action="${ctx.root}dead-letters/${action}">${tokenField(ctx)}${hiddenFilter(fields)}<input type="hidden" name="scope" value="filter"><input type="hidden" name="confirm" value="yes">
<button type="submit" class="${action === 'purge' ? 'danger' : ''}" data-action="confirm-${action}"${would === 0 ? html` disabled` : ''}>${verb} ${would}</button>
<a href="${ctx.root}dead-letters${queryOfFields(fields)}">Cancel</a>
</form>`;
}

/** @internal What an action did, in counts, and the way back to the list. */
export function resultContent(ctx: PageContext, title: string, lines: Array<[string, number]>, fields: FilterFields, skipped: Array<{ id: string; reason: string }> = []): SafeHtml {
  return html`<h2 data-field="result">${title}</h2>
<dl class="facts">${lines.map(([label, n]) => html`<dt>${label}</dt><dd data-field="${label.toLowerCase().replace(/\W+/g, '-')}">${n}</dd>`)}</dl>
${skipped.length > 0 ? html`<ul class="skipped">${skipped.slice(0, 50).map((s) => html`<li><code>${s.id}</code>: ${s.reason}</li>`)}</ul>` : ''}
<p><a href="${ctx.root}dead-letters${queryOfFields(fields)}" data-action="back">Back to the list</a></p>`;
}
