import { html, type HtmlValue, type SafeHtml } from './html';

/** What every page knows: the link to the console's root, the instance it shows, the CSRF token for its forms. */
export interface PageContext {
  /** Relative link to the console's root, ending in `/` (see `rootHref`). */
  root: string;
  instance: string;
  token: string;
}

/** @internal A whole page: the console's stylesheet and script (no inline script or style), the instance, the navigation. */
export function layout(ctx: PageContext, title: string, current: 'overview' | 'routes' | 'dead-letters', content: HtmlValue): SafeHtml {
  const link = (href: string, name: typeof current, text: string) =>
    html`<a href="${ctx.root}${href}"${name === current ? html` aria-current="page"` : ''}>${text}</a>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · deferred work · ${ctx.instance}</title>
<link rel="icon" href="${ctx.root}assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ctx.root}assets/console.css">
<script src="${ctx.root}assets/console.js" defer></script>
</head>
<body>
<header>
<h1>Deferred work</h1>
<p class="instance">Instance <strong data-field="instance">${ctx.instance}</strong></p>
<nav>${link('', 'overview', 'Overview')} ${link('routes', 'routes', 'Routes')} ${link('dead-letters', 'dead-letters', 'Dead letters')}</nav>
</header>
<main>
${content}
</main>
</body>
</html>
`;
}

/** @internal The hidden CSRF field every form that changes something carries. */
export function tokenField(ctx: PageContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${ctx.token}">`;
}
