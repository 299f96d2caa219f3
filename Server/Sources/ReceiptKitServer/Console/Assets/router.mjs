// Addresses to views: #/ (the overview), #/find/TEXT, #/customer/ID, #/subscription/ID. The
// newest address wins (a view that answers after the next one started is dropped), and what a
// view drew to the window's width is drawn again when the window is resized.

import { el } from './dom.mjs';

/**
 * The view an address names and its argument.
 * @param {string} hash `location.hash`: `#/customer/c%2F1`.
 * @returns {{name: string, value: string}} `{name: 'customer', value: 'c/1'}`; the argument as
 *   it is when it is not percent-encoded text.
 */
export function parseRoute(hash) {
  const [name, argument] = hash.replace(/^#\/?/, '').split('/');
  if (argument === undefined) return { name, value: '' };
  try {
    return { name, value: decodeURIComponent(argument) };
  } catch (_) {
    return { name, value: argument };
  }
}

/**
 * A router over the page's view element.
 * @param {object} options
 * @param {Record<string, (value: string, context: object) => Promise<Node>>} options.views By
 *   address name; `overview` for any other address.
 * @param {() => boolean} options.canRead Whether the API can be read now (signed in, or no
 *   token needed): until then no view is drawn.
 * @param {object} options.context What every view is given besides its argument: `api`; the
 *   router adds `reroute()` and `redrawOnResize(draw)`.
 * @returns {{route: () => void, redrawOnResize: (draw: () => void) => void}}
 */
export function createRouter({ views, canRead, context }) {
  const view = () => document.getElementById('view');
  let generation = 0;
  let redraws = [];
  const router = {
    route() {
      if (!canRead()) return;
      const { name, value } = parseRoute(location.hash);
      const mine = ++generation;
      redraws = [];
      view().replaceChildren(el('div', { class: 'loading muted' }, 'Loading…'));
      const render = Object.hasOwn(views, name) ? views[name] : views.overview;
      render(value, viewContext).then((content) => {
        if (mine === generation) view().replaceChildren(content);
      }, (error) => {
        if (mine === generation && error.status !== 401) view().replaceChildren(el('p', { class: 'error' }, 'Failed: ' + error.message));
      });
    },
    redrawOnResize(draw) {
      redraws.push(draw);
    },
  };
  const viewContext = { ...context, reroute: () => router.route(), redrawOnResize: (draw) => router.redrawOnResize(draw) };
  window.addEventListener('hashchange', () => router.route());
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => redraws.forEach((redraw) => redraw()), 150);
  });
  return router;
}
