// The overview (#/, from GET /v1/overview): subscriptions by status, by product and by app and
// environment (each but Production marked Sandbox), notifications
// per day by type, the last notifications and those refused, reconciliation with Apple, and what
// waits in the outbox, with sending the failed ones again for an admin token.

import { actionBar } from './access.mjs';
import { el, svg } from './dom.mjs';
import { duration, notificationKind, STATUSES, statusWords, when } from './format.mjs';
import { CHART, notificationChart } from './scale.mjs';

/**
 * The overview.
 * @param {string} _ The address' argument (none).
 * @param {{api: (path: string, options?: {method?: string}) => Promise<any>, access: {scope: () => Promise<string>},
 *   redrawOnResize: (draw: () => void) => void}} context
 * @returns {Promise<Node>}
 */
export async function renderOverview(_, { api, access, redrawOnResize }) {
  const [data, scope] = await Promise.all([api('/v1/overview'), access.scope()]);
  const subscriptions = data.subscriptions;
  const counts = el('div', { class: 'counts' }, subscriptions.by_status.map((item) =>
    el('div', { class: 'count ' + item.status, 'data-status': item.status }, el('strong', {}, item.count), statusWords(item.status))));
  const products = el('div', { class: 'scroll' }, el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Product'), el('th', {}, 'Total'), STATUSES.map((status) => el('th', {}, statusWords(status))))),
    el('tbody', {}, subscriptions.by_product.map((product) => el('tr', {},
      el('td', { class: 'mono' }, product.product_id || '—'), el('td', {}, product.total),
      product.by_status.map((item) => el('td', {}, item.count)))))));
  const apps = el('div', { class: 'scroll' }, el('table', { class: 'apps' },
    el('thead', {}, el('tr', {}, el('th', {}, 'App'), el('th', {}, 'Environment'), el('th', {}, 'Total'),
      STATUSES.map((status) => el('th', {}, statusWords(status))))),
    el('tbody', {}, subscriptions.by_app.map((app) => el('tr', { 'data-environment': app.environment },
      el('td', { class: 'mono' }, app.bundle_id),
      el('td', {}, app.environment, app.sandbox ? el('span', { class: 'badge sandbox' }, 'Sandbox') : null),
      el('td', {}, app.total), app.by_status.map((item) => el('td', {}, item.count)))))));
  const notifications = data.notifications;
  const chart = el('div', { class: 'chart' });
  const legend = el('ul', { class: 'legend' });
  const draw = () => drawNotificationChart(chart, legend, notifications.days);
  redrawOnResize(draw);
  requestAnimationFrame(draw);
  const recent = el('div', { class: 'scroll' }, el('table', { class: 'recent' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Received'), el('th', {}, 'Result'), el('th', {}, 'Type'), el('th', {}, 'Subscription'))),
    el('tbody', {}, notifications.recent.map((item) => el('tr', {},
      el('td', {}, when(item.received_at)),
      el('td', {}, el('span', { class: 'badge ' + (item.result === 'verified' ? 'verified' : 'rejected') }, item.result),
        item.message ? el('div', { class: 'muted' }, item.message) : null),
      el('td', {}, notificationKind(item.type, item.subtype) || '—'),
      el('td', {}, item.original_transaction_id
        ? el('a', { href: '#/subscription/' + encodeURIComponent(item.original_transaction_id) }, item.original_transaction_id) : '—'))))));
  const rejected = notifications.rejected;
  const reconciliation = data.reconciliation;
  return el('div', {},
    el('h1', {}, 'Overview'), el('p', { class: 'muted' }, 'As of ' + when(data.as_of)),
    el('section', { class: 'card' }, el('h2', {}, 'Subscriptions by status'), counts,
      el('p', { class: 'muted' }, subscriptions.total + ' subscriptions, each counted by its state now.'),
      el('h3', {}, 'By app and environment'), apps,
      el('h3', {}, 'By product'), products),
    el('section', { class: 'card' }, el('h2', {}, 'Notifications received per day, last 30 days'), chart, legend),
    el('div', { class: 'grid' },
      el('section', { class: 'card' }, el('h2', {}, 'Last notifications'), recent,
        el('p', { class: 'muted' }, 'Refused notifications are never stored: this server process refused ' + rejected.total +
          ' since ' + when(rejected.since) +
          (rejected.by_code.length ? ' (' + rejected.by_code.map((item) => item.code + ': ' + item.count).join(', ') + ').' : '.'))),
      el('section', { class: 'card' }, el('h2', {}, 'Reconciliation with Apple'),
        reconciliation.enabled
          ? el('p', { class: 'reconcile' }, reconciliation.cursor
            ? 'Notification history read up to ' + when(reconciliation.cursor) + ': ' + duration(reconciliation.lag_seconds) + ' behind.'
            : 'On; no window read yet.')
          : el('p', { class: 'reconcile muted' }, 'Off: no In-App Purchase key is configured.')),
      el('section', { class: 'card' }, el('h2', {}, 'Deliveries'), deliveryBacklog(data.deliveries, scope, api))));
}

// What waits in the outbox per destination, how many ran out of time, and (admin) sending those
// again.
function deliveryBacklog(deliveries, scope, api) {
  const rows = deliveries.destinations.map((item) => el('tr', {},
    el('td', {}, item.kind), el('td', { class: 'target' }, item.target),
    el('td', {}, String(item.pending)), el('td', {}, duration(item.oldest_pending_seconds))));
  return el('div', { class: 'deliveries' },
    rows.length
      ? el('div', { class: 'scroll' }, el('table', { class: 'backlog' },
          el('thead', {}, el('tr', {}, el('th', {}, 'Kind'), el('th', {}, 'Destination'), el('th', {}, 'Waiting'), el('th', {}, 'Oldest'))),
          el('tbody', {}, rows)))
      : el('p', { class: 'muted' }, 'Nothing waiting to be sent.'),
    el('p', { class: deliveries.failed ? 'failed' : 'muted' },
      (deliveries.failed_complete ? String(deliveries.failed) : 'At least ' + deliveries.failed) +
      ' ran out of time (GET /v1/webhooks/deliveries?state=failed lists them; POST …/{id}/retry sends one again).'),
    deliveries.failed ? actionBar(scope, [{ name: 'retry-failed', label: 'Send the failed ones again', needs: 'admin', run: async () => {
      const page = await api('/v1/webhooks/deliveries?state=failed');
      for (const delivery of page.deliveries) await api('/v1/webhooks/deliveries/' + encodeURIComponent(delivery.id) + '/retry', { method: 'POST' });
      return page.deliveries.length + ' sent again' + (page.has_more ? '; more are listed on the next page.' : '.');
    } }]) : null);
}

// The notification chart at the width its box has now, and its legend.
function drawNotificationChart(chart, legend, days) {
  const width = Math.max(280, chart.clientWidth || 600);
  const { height, bottom } = CHART;
  const layout = notificationChart(days, width);
  const picture = svg('svg', { class: 'notifications', viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img',
    'aria-label': 'Notifications received per day by type' });
  picture.appendChild(svg('text', { x: 2, y: 10 }, layout.maximum + ' per day'));
  for (const bar of layout.bars) {
    picture.appendChild(svg('g', { class: 'bar', 'data-day': bar.day, 'data-total': bar.total }, bar.segments.map((segment) =>
      svg('rect', { class: 't' + layout.colour(segment.type), x: segment.x, y: segment.y, width: segment.width, height: segment.height,
        'data-type': segment.type, 'data-count': segment.count }, svg('title', {}, bar.day + ' ' + segment.type + ': ' + segment.count)))));
    if (bar.label !== null) picture.appendChild(svg('text', { x: bar.x, y: height - 6 }, bar.label));
  }
  picture.appendChild(svg('line', { class: 'axis', x1: 0, x2: width, y1: height - bottom + 0.5, y2: height - bottom + 0.5 }));
  chart.replaceChildren(picture);
  const types = layout.types;
  legend.replaceChildren(...(types.length ? types : ['(none yet)']).map((type) => el('li', {},
    el('span', { class: 'swatch ' + (types.length ? 't' + layout.colour(type) : '') }), type + (layout.totals.has(type) ? ' ' + layout.totals.get(type) : ''))));
}
