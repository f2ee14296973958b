/**
 * A hand-written SVG chart of the results: per scenario and adapter, one bar per variant, req/s on
 * the left panel and server CPU µs per request on the right. No dependencies, no runtime imports.
 */
import type { ResultRow, Variant } from './types.js';

const COLORS: Record<Variant, string> = {
  plain: '#9aa5b1',
  'noop-interceptor': '#c3cad3',
  blocking: '#e4572e',
  deferred: '#2e86ab',
  'deferred-offload': '#1b998b',
  'deferred-spool': '#3d5a80',
  'deferred-packed': '#e07a5f',
  'deferred-handle': '#5b8def',
  'deferred-injected': '#8e6bd8',
  'article-tap': '#f2a541',
  'event-emitter': '#8e6c8a',
};
const ORDER: readonly Variant[] = ['plain', 'noop-interceptor', 'blocking', 'deferred', 'deferred-offload', 'deferred-spool', 'deferred-packed', 'article-tap', 'event-emitter'];

/** Escapes text for SVG content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const fmt = (v: number): string =>
  !Number.isFinite(v) ? 'n/a' : v === 0 ? '0' : v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(v >= 10 ? 1 : 2);

/** A round axis maximum at or above `max` (1, 2, 2.5 or 5 times a power of ten). */
export function niceMax(max: number): number {
  if (!Number.isFinite(max) || max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

export interface SvgOptions {
  title?: string;
}

/** Renders the chart. Rows are grouped by scenario then adapter, in order of first appearance. */
export function renderSvg(rows: readonly ResultRow[], options: SvgOptions = {}): string {
  const groups: Array<{ label: string; rows: ResultRow[] }> = [];
  for (const row of rows) {
    const label = `${row.scenarioLabel} · ${row.adapter}`;
    let group = groups.find((g) => g.label === label);
    if (!group) groups.push((group = { label, rows: [] }));
    group.rows.push(row);
  }
  for (const g of groups) g.rows.sort((a, b) => ORDER.indexOf(a.variant) - ORDER.indexOf(b.variant));

  const bar = 11;
  const gap = 2;
  const groupGap = 16;
  const labelH = 16;
  const left = 16;
  const panelW = 330;
  const panelGap = 70;
  const top = 78;
  const width = left + panelW + panelGap + panelW + 60;
  const height =
    top + groups.reduce((h, g) => h + labelH + g.rows.length * (bar + gap) + groupGap, 0) + 24;
  const maxRps = niceMax(Math.max(0, ...rows.map((r) => (Number.isFinite(r.reqPerSec) ? r.reqPerSec : 0))));
  const maxCpu = niceMax(Math.max(0, ...rows.map((r) => (Number.isFinite(r.cpuUsPerRequest) ? r.cpuUsPerRequest : 0))));
  const x1 = left;
  const x2 = left + panelW + panelGap;
  const scale = (value: number, max: number) => (Number.isFinite(value) && value > 0 ? (value / max) * panelW : 0);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${left}" y="22" font-size="15" font-weight="600" fill="#1f2933">${escapeXml(
      options.title ?? 'nestjs-deferred-work benchmark',
    )}</text>`,
  );
  let lx = left;
  for (const v of ORDER) {
    out.push(`<rect x="${lx}" y="34" width="12" height="12" fill="${COLORS[v]}"/>`);
    out.push(`<text x="${lx + 16}" y="44" fill="#323f4b">${v}</text>`);
    lx += 16 + v.length * 6.5 + 18;
  }
  out.push(`<text x="${x1}" y="68" font-weight="600" fill="#323f4b">requests per second (higher is better)</text>`);
  out.push(`<text x="${x2}" y="68" font-weight="600" fill="#323f4b">server CPU µs per request, worker threads included (lower is better)</text>`);

  // Gridlines with their values.
  const gridBottom = height - 24;
  for (const [x0, max] of [
    [x1, maxRps],
    [x2, maxCpu],
  ] as const) {
    for (let i = 0; i <= 4; i++) {
      const x = x0 + (panelW * i) / 4;
      out.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${gridBottom}" stroke="#e4e7eb" stroke-width="1"/>`);
      out.push(`<text x="${x}" y="${gridBottom + 14}" text-anchor="middle" fill="#7b8794">${fmt((max * i) / 4)}</text>`);
    }
  }

  let y = top;
  for (const g of groups) {
    out.push(`<text x="${x1}" y="${y + 11}" font-weight="600" fill="#1f2933">${escapeXml(g.label)}</text>`);
    y += labelH;
    for (const row of g.rows) {
      const color = COLORS[row.variant];
      const w1 = scale(row.reqPerSec, maxRps);
      const w2 = scale(row.cpuUsPerRequest, maxCpu);
      const title = `${row.scenario} ${row.adapter} ${row.variant}`;
      out.push(
        `<rect x="${x1}" y="${y}" width="${w1.toFixed(1)}" height="${bar}" fill="${color}"><title>${escapeXml(title)}: ${fmt(row.reqPerSec)} req/s</title></rect>`,
      );
      out.push(`<text x="${(x1 + w1 + 4).toFixed(1)}" y="${y + 9}" fill="#323f4b">${fmt(row.reqPerSec)}</text>`);
      out.push(
        `<rect x="${x2}" y="${y}" width="${w2.toFixed(1)}" height="${bar}" fill="${color}"><title>${escapeXml(title)}: ${fmt(row.cpuUsPerRequest)} µs/request</title></rect>`,
      );
      // the whole process; a sink worker's share (deferred-offload) is named next to it
      const worker = row.workerCpuUsPerRequest > 0 ? ` (worker ${fmt(row.workerCpuUsPerRequest)})` : '';
      out.push(`<text x="${(x2 + w2 + 4).toFixed(1)}" y="${y + 9}" fill="#323f4b">${fmt(row.cpuUsPerRequest)}${worker}</text>`);
      y += bar + gap;
    }
    y += groupGap;
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
