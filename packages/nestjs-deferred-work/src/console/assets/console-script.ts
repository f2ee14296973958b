/**
 * @internal
 * The console's only script, served as `assets/console.js` (the Content-Security-Policy allows no other
 * and no inline script): it refreshes the overview's live part every few seconds (the server's escaped
 * HTML, parsed inert with `DOMParser`, never `eval`), asks before discarding, and selects a page's rows.
 */
export const CONSOLE_SCRIPT = String.raw`(function () {
  'use strict';
  var live = document.querySelector('[data-refresh]');
  var status = document.querySelector('[data-field="refresh-status"]');
  var busy = false;
  function refresh() {
    if (!live || busy || document.hidden) return;
    busy = true;
    fetch(live.getAttribute('data-refresh'), { credentials: 'same-origin', headers: { Accept: 'text/html' }, cache: 'no-store' })
      .then(function (response) {
        if (!response.ok) throw new Error('HTTP ' + response.status);
        return response.text();
      })
      .then(function (text) {
        var parsed = new DOMParser().parseFromString(text, 'text/html');
        live.replaceChildren.apply(live, Array.prototype.slice.call(parsed.body.childNodes));
        live.removeAttribute('data-stale');
        if (status) status.textContent = '';
      })
      .catch(function (error) {
        live.setAttribute('data-stale', 'true');
        if (status) status.textContent = 'Refresh failed (' + error.message + '): the figures below are from the last refresh.';
      })
      .then(function () {
        busy = false;
      });
  }
  if (live) {
    setInterval(refresh, Number(live.getAttribute('data-refresh-ms')) || 5000);
    document.addEventListener('visibilitychange', refresh);
  }
  document.addEventListener('click', function (event) {
    var button = event.target && event.target.closest ? event.target.closest('[data-confirm]') : null;
    if (button && !window.confirm(button.getAttribute('data-confirm'))) event.preventDefault();
  });
  var all = document.querySelector('[data-select-all]');
  if (all) {
    all.addEventListener('change', function () {
      var boxes = document.querySelectorAll('input[type="checkbox"][name="id"]');
      for (var i = 0; i < boxes.length; i++) boxes[i].checked = all.checked;
    });
  }
})();
`;
