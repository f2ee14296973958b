import type { DeferredStats, SinkStats } from '../../core/stats.interface';
import type { Series, StatsHistory } from '../stats-history';
import { bytes, duration, html, type SafeHtml, utc } from './html';

const SPARK_W = 120;
const SPARK_H = 24;

/** @internal What the overview shows of one sink's state: `failing` while every write fails, else its `state`. */
export function stateOf(sink: SinkStats): 'up' | 'failing' | 'probing' | 'draining' | 'refusing' {
  if (sink.state === 'refusing') return 'refusing';
  if (sink.failingSince !== undefined) return 'failing';
  return sink.state ?? 'up';
}

/** A line over the kept samples (from `since` to `now`), scaled to its own largest value (named in its title). */
function sparkline(series: Series, label: string, since: number, now: number, unit: string): SafeHtml {
  const max = Math.max(0, ...series.values);
  const span = Math.max(1, now - since);
  const points = series.values.map((v, i) => {
    const x = Math.max(0, Math.min(SPARK_W, ((series.at[i]! - since) / span) * SPARK_W));
    const y = SPARK_H - 1 - (max > 0 ? (v / max) * (SPARK_H - 2) : 0);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const last = series.values.length > 0 ? series.values[series.values.length - 1]! : 0;
  const title = `${label}, last ${duration(span)}: now ${round(last)}${unit}, highest ${round(max)}${unit}`;
  return html`<svg class="spark" viewBox="0 0 ${SPARK_W} ${SPARK_H}" width="${SPARK_W}" height="${SPARK_H}" role="img" aria-label="${title}"><title>${title}</title>${
    points.length > 1 ? html`<polyline points="${points.join(' ')}"></polyline>` : html`<text x="2" y="16">no samples yet</text>`
  }</svg>`;
}

function round(n: number): string {
  return n >= 100 ? String(Math.round(n)) : String(Math.round(n * 10) / 10);
}

function rate(n: number | undefined): string {
  return n === undefined ? '–' : round(n);
}

function stateCell(name: string, sink: SinkStats, budget: number | undefined, now: number): SafeHtml {
  const state = stateOf(sink);
  const since = (at: number | undefined) => (at === undefined ? '' : html` since <time datetime="${utc(at)}">${utc(at)}</time> (${duration(now - at)})`);
  const error = sink.lastError === undefined ? '' : html`<div class="error"><code data-field="lastErrorCode">${sink.lastErrorCode ?? 'no code'}</code> <span data-field="lastError">${sink.lastError}</span></div>`;
  let detail: SafeHtml | string = '';
  if (state === 'failing') detail = html`<div>every write fails${since(sink.failingSince)}${sink.state === 'probing' ? ' · probing: the oldest batch is retried with backoff' : ''}</div>${error}`;
  else if (state === 'refusing')
    detail = html`<div>drops new items${since(sink.refusingSince)}: holds ${bytes(sink.heldBytes ?? 0)}${budget === undefined ? '' : html` of its ${bytes(budget)} budget`}</div>${error}`;
  else if (state === 'probing') detail = html`<div>probing${since(sink.outageSince)}</div>${error}`;
  else if (state === 'draining') detail = html`<div>back up, delivering the outage's backlog${since(sink.outageSince)}</div>`;
  return html`<td><span class="state state-${state}" data-field="state" data-sink-state="${name}">${state}</span>${detail}</td>`;
}

/** @internal The overview's live part: each sink, the callbacks, the requests; what the page refreshes. */
export function overviewFragment(root: string, stats: DeferredStats, history: StatsHistory, budgets: ReadonlyMap<string, number>, now = Date.now()): SafeHtml {
  const names = Object.keys(stats.sinks).filter((n) => stats.sinks[n]!.state !== undefined);
  const since = Math.max(history.oldestAt ?? now, now - history.capacity * history.intervalMs);
  const rows = names.map((name) => {
    const s = stats.sinks[name]!;
    const deliveredPerMin = history.rateOverLastMinute(name, 'delivered', s.delivered, now);
    const failedPerMin = history.rateOverLastMinute(name, 'failedWrites', s.failedWrites, now);
    return html`<tr data-sink="${name}">
<th scope="row">${name}</th>
${stateCell(name, s, budgets.get(name), now)}
<td class="num" data-field="pending">${s.pending}</td>
<td class="num" data-field="inFlight">${s.inFlight}</td>
<td class="num" data-field="oldestPendingAgeMs" data-value="${s.oldestPendingAgeMs ?? 0}">${duration(s.oldestPendingAgeMs ?? 0)}</td>
<td class="num"><span data-field="deliveredPerMin">${rate(deliveredPerMin)}</span><div class="sub">total <span data-field="delivered">${s.delivered}</span></div></td>
<td class="num"><span data-field="failedWritesPerMin">${rate(failedPerMin)}</span><div class="sub">total <span data-field="failedWrites">${s.failedWrites}</span></div></td>
<td class="num" data-field="retried">${s.retried}</td>
<td class="num"><a href="${root}dead-letters?sink=${encodeURIComponent(name)}" data-field="deadLettered">${s.deadLettered}</a></td>
<td class="num" data-field="spoolBytes" data-value="${s.spool?.bytes ?? ''}">${s.spool ? bytes(s.spool.bytes) : '–'}</td>
<td class="sparks">${sparkline(history.gauge(name, 'pending'), 'pending', since, now, '')}${sparkline(history.perMinute(name, 'delivered'), 'delivered/min', since, now, '/min')}${sparkline(history.perMinute(name, 'failedWrites'), 'failed writes/min', since, now, '/min')}</td>
</tr>`;
  });
  const cb = stats.callbacks;
  const runner = stats.sinks.callbacks;
  return html`<p class="updated">Updated <time data-field="updated" datetime="${utc(now)}">${utc(now)}</time></p>
<table class="sinks">
<thead><tr><th scope="col">Sink</th><th scope="col">State</th><th scope="col">Pending</th><th scope="col">In flight</th><th scope="col">Oldest pending</th><th scope="col">Delivered/min</th><th scope="col">Failed writes/min</th><th scope="col">Retries</th><th scope="col">Dead letters</th><th scope="col">Spool</th><th scope="col">Recent: pending · delivered/min · failed writes/min</th></tr></thead>
<tbody>${rows}</tbody>
</table>
<h2>Callbacks</h2>
<dl class="facts" data-section="callbacks">
<dt>Running</dt><dd data-field="callbacksRunning">${cb.running}</dd>
<dt>Queued</dt><dd data-field="callbacksQueued">${cb.queued}</dd>
<dt>Overdue</dt><dd data-field="callbacksOverdue" class="${cb.overdue > 0 ? 'bad' : ''}">${cb.overdue}</dd>
<dt>Timed out</dt><dd data-field="callbacksTimedOut">${cb.timedOut}</dd>
<dt>Dead letters</dt><dd data-field="callbacksDeadLettered">${runner?.deadLettered ?? 0}</dd>
</dl>
<h2>All sinks</h2>
<dl class="facts" data-section="totals">
<dt>Accepted</dt><dd data-field="accepted">${stats.accepted}</dd>
<dt>Delivered</dt><dd data-field="totalDelivered">${stats.delivered}</dd>
<dt>Pending</dt><dd data-field="totalPending">${stats.pending}</dd>
<dt>Dropped</dt><dd data-field="dropped">${stats.dropped}</dd>
<dt>Dead-lettered</dt><dd data-field="totalDeadLettered">${stats.deadLettered}</dd>
<dt>Rejected</dt><dd data-field="rejected">${stats.rejected}</dd>
<dt>Requests finished / aborted / open</dt><dd data-field="requests">${stats.requests.finished} / ${stats.requests.aborted} / ${stats.requests.open}</dd>
</dl>
<p class="note">Sparklines: the last ${duration(now - since)} (${history.capacity} samples at most, one every ${duration(history.intervalMs)} while the console is mounted; ${bytes(history.bytes)} held). Rates per minute over the last minute.</p>`;
}
