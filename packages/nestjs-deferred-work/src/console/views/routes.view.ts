import type { DeferredStats } from '../../core/stats.interface';
import { html, type SafeHtml } from './html';

const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** @internal The routes page: per `@AfterResponse()` route measured with `timing`, its handler and send times and items per request. */
export function routesContent(stats: DeferredStats, timing: boolean): SafeHtml {
  const routes = Object.entries(stats.routes).sort(([a], [b]) => a.localeCompare(b));
  if (routes.length === 0) {
    return html`<h2>Routes</h2><p class="empty">${
      timing
        ? 'No measured request yet: routes appear once a request to an @AfterResponse() route has finished.'
        : 'Timing is off: turn it on with DeferredWorkModule.forRoot({ timing: true }) or @AfterResponse({ timing: true }) to see handler and send times per route.'
    }</p>`;
  }
  const rows = routes.map(
    ([route, t]) => html`<tr data-route="${route}">
<th scope="row"><code>${route}</code></th>
<td class="num" data-field="count">${t.count}</td>
<td class="num" data-field="handlerMsP50">${ms(t.handlerMsP50)}</td>
<td class="num" data-field="handlerMsP95">${ms(t.handlerMsP95)}</td>
<td class="num" data-field="handlerMsMax">${ms(t.handlerMsMax)}</td>
<td class="num" data-field="sendMsP50">${ms(t.sendMsP50)}</td>
<td class="num" data-field="sendMsP95">${ms(t.sendMsP95)}</td>
<td class="num" data-field="sendMsMax">${ms(t.sendMsMax)}</td>
<td class="num" data-field="itemsAvg">${t.itemsAvg}</td>
<td class="num" data-field="itemsMax">${t.itemsMax}</td>
</tr>`,
  );
  return html`<h2>Routes</h2>
<p class="note">Handler: from the request reaching the interceptor until the handler returned. Send: from then until the response finished (serialisation, compression, a slow client). Times in ms since the process started; quantiles within about 12%.</p>
<table class="routes">
<thead><tr><th scope="col">Route</th><th scope="col">Requests</th><th scope="col">Handler p50</th><th scope="col">Handler p95</th><th scope="col">Handler max</th><th scope="col">Send p50</th><th scope="col">Send p95</th><th scope="col">Send max</th><th scope="col">Items/request</th><th scope="col">Items max</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}
