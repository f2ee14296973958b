/**
 * A hand-written SVG line chart of a few metrics over time (one panel per metric, shared time axis,
 * shaded outage), drawn from Prometheus range queries of a test run. No dependencies; the escaping and
 * the axis maximum are the benchmark chart's.
 */
import { escapeXml, niceMax } from '../../examples/benchmark-app/src/bench/svg';

export interface ChartPanel {
  title: string;
  unit: string;
  /** `[seconds since the start, value]` points. */
  points: Array<[number, number]>;
  color: string;
}

const fmt = (v: number) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v >= 10 ? v.toFixed(0) : v === 0 ? '0' : v.toFixed(v >= 1 ? 1 : 2));

/** Renders the panels stacked, with the outage (`[from, to]` seconds since the start) shaded on each. */
export function renderOutageChart(title: string, panels: readonly ChartPanel[], outage: readonly [number, number], caption: string): string {
  const width = 760;
  const left = 64;
  const right = 20;
  const panelH = 110;
  const gap = 38;
  const top = 56;
  const plotW = width - left - right;
  const end = Math.max(1, ...panels.flatMap((p) => p.points.map(([t]) => t)));
  const x = (t: number) => left + (t / end) * plotW;
  const height = top + panels.length * (panelH + gap) + 30;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="600">${escapeXml(title)}</text>`,
    `<text x="${left}" y="40" fill="#555">${escapeXml(caption)}</text>`,
  ];
  panels.forEach((panel, i) => {
    const y0 = top + i * (panelH + gap) + 16;
    const max = niceMax(Math.max(0, ...panel.points.map(([, v]) => v)));
    const y = (v: number) => y0 + panelH - (v / max) * panelH;
    out.push(`<text x="${left}" y="${y0 - 6}" font-weight="600">${escapeXml(panel.title)} <tspan fill="#777" font-weight="400">(${escapeXml(panel.unit)})</tspan></text>`);
    out.push(`<rect x="${x(outage[0]).toFixed(1)}" y="${y0}" width="${(x(outage[1]) - x(outage[0])).toFixed(1)}" height="${panelH}" fill="#e4572e" fill-opacity="0.12"/>`);
    for (const frac of [0, 0.5, 1]) {
      const v = max * frac;
      out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e3e6ea"/>`);
      out.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${fmt(v)}</text>`);
    }
    const path = panel.points.map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    if (path) out.push(`<path d="${path}" fill="none" stroke="${panel.color}" stroke-width="1.6"/>`);
  });
  const axisY = top + panels.length * (panelH + gap) - gap + 16 + 14;
  for (let t = 0; t <= end; t += end > 20 ? 5 : 2) out.push(`<text x="${x(t).toFixed(1)}" y="${axisY}" text-anchor="middle" fill="#555">${t} s</text>`);
  out.push(`<text x="${x((outage[0] + outage[1]) / 2).toFixed(1)}" y="${top + 8}" text-anchor="middle" fill="#b23a1b">Redis down</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
