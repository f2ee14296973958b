/** @internal The console's stylesheet, served as `assets/console.css` (no inline style anywhere: the CSP allows none). */
export const CONSOLE_STYLE = String.raw`:root { color-scheme: light dark; --fg: #1b1f24; --muted: #5b6570; --line: #d0d7de; --bg: #fff; --panel: #f6f8fa; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --accent: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9aa4ae; --line: #30363d; --bg: #0d1117; --panel: #161b22; --ok: #3fb950; --warn: #d29922; --bad: #f85149; --accent: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0.5rem 1.5rem; padding: 0.75rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 1.1rem; margin: 0; }
h2 { font-size: 1rem; margin: 1.25rem 0 0.5rem; }
h3 { font-size: 0.95rem; margin: 1rem 0 0.4rem; }
.instance { margin: 0; color: var(--muted); }
nav a { margin-right: 0.9rem; color: var(--accent); text-decoration: none; }
nav a[aria-current="page"] { font-weight: 600; text-decoration: underline; }
main { padding: 0.5rem 1.25rem 2rem; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
th, td { text-align: left; vertical-align: top; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); }
thead th { font-weight: 600; color: var(--muted); font-size: 0.85rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.sub, .note, .updated { color: var(--muted); font-size: 0.85rem; }
.error { color: var(--bad); font-size: 0.85rem; max-width: 32rem; overflow-wrap: anywhere; }
.message { max-width: 28rem; overflow-wrap: anywhere; }
.state { display: inline-block; padding: 0 0.5rem; border-radius: 0.75rem; font-weight: 600; font-size: 0.8rem; border: 1px solid currentColor; }
.state-up { color: var(--ok); }
.state-draining, .state-probing { color: var(--warn); }
.state-failing, .state-refusing { color: var(--bad); }
.bad { color: var(--bad); font-weight: 600; }
.sparks { white-space: nowrap; }
.spark { display: inline-block; margin-right: 0.35rem; vertical-align: middle; background: var(--panel); }
.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
.spark text { fill: var(--muted); font-size: 9px; }
.facts { display: grid; grid-template-columns: max-content max-content; gap: 0.2rem 1rem; margin: 0.25rem 0; }
.facts dd, .record dd { margin: 0; }
.record { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; }
.record dt, .facts dt { color: var(--muted); }
.filter { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: end; padding: 0.6rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
.filter label { display: flex; flex-direction: column; font-size: 0.85rem; color: var(--muted); }
.bulk { display: flex; gap: 0.75rem; margin: 0.6rem 0; }
#selected { margin: 0.5rem 0; }
button { font: inherit; padding: 0.3rem 0.8rem; border-radius: 6px; border: 1px solid var(--line); background: var(--panel); color: var(--fg); cursor: pointer; }
button.danger { color: var(--bad); border-color: var(--bad); }
button[disabled] { opacity: 0.5; cursor: default; }
pre { background: var(--panel); border: 1px solid var(--line); padding: 0.75rem; overflow: auto; max-height: 24rem; white-space: pre-wrap; overflow-wrap: anywhere; }
code { font: 0.85rem ui-monospace, SFMono-Regular, Menlo, monospace; }
[data-stale] { opacity: 0.6; }
.refresh-status { color: var(--bad); }
.empty { color: var(--muted); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
`;

/** @internal The console's icon, served as `assets/icon.svg` (the browser asks for one; without it, a 404 at the app's root). */
export const CONSOLE_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0969da"/><path d="M4 8h5M7 5l3 3-3 3" stroke="#fff" stroke-width="1.6" fill="none"/></svg>';
