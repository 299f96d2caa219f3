// A customer (#/customer/ID, from GET /v1/customers/{id}/entitlements): entitled now or not and
// why, the actions the token's scope allows (sync with Apple: write; delete: admin), with an
// entitlements file their named entitlements and grants (entitlements.mjs: granting and ending a
// grant, write), a card per subscription, then the times the customer reached the App Store's
// cancel screen and what they were shown (GET /v1/customers/{id}/retention-requests); and a
// subscription alone (#/subscription/ID). A card shows the subscription's
// sync action (write), its timeline, the state as of an instant clicked on it, the records behind
// it, and its state now.

import { actionBar } from './access.mjs';
import { el } from './dom.mjs';
import { entitlementCards } from './entitlements.mjs';
import { activeEntitlements, entitlementReason, retentionAnswer, statusWords, when } from './format.mjs';
import { STATE_FIELDS, stateList } from './state.mjs';
import { drawTimeline } from './timeline.mjs';

/**
 * A customer's page.
 * @param {string} customerId
 * @param {object} context The router's: `api`, `access`, `reroute`, `redrawOnResize`.
 * @returns {Promise<Node>}
 */
export async function renderCustomer(customerId, context) {
  const path = '/v1/customers/' + encodeURIComponent(customerId);
  const [data, scope, retention] = await Promise.all([
    context.api(path + '/entitlements'), context.access.scope(), context.api(path + '/retention-requests?limit=100')]);
  // Named entitlements and grants only on a server with an entitlements file.
  const named = data.entitlements
    ? entitlementCards({ path, entitlements: data.entitlements, grants: (await context.api(path + '/grants')).grants, scope,
      api: context.api, reroute: context.reroute })
    : null;
  const actions = actionBar(scope, [
    { name: 'sync-customer', label: 'Sync with Apple', needs: 'write', run: async () => {
      await context.api(path + '/sync', { method: 'POST' });
      context.reroute();
      return null;
    } },
    { name: 'delete-customer', label: 'Delete customer…', needs: 'admin', run: async () => {
      if (!confirm('Erase customer ' + customerId + ' from this server? Their subscriptions stay, linked to no one. This cannot be undone.')) return 'Not deleted.';
      const erased = await context.api(path, { method: 'DELETE' });
      return 'Deleted: ' + erased.subscriptions.length + ' subscription(s) now linked to no one.';
    } },
  ]);
  return el('div', {},
    el('h1', {}, 'Customer ', el('code', { class: 'customer-id' }, customerId)),
    el('div', { class: 'entitlement ' + (data.entitled ? 'entitled' : 'not-entitled') },
      el('strong', {}, data.entitled ? 'Entitled now' : 'Not entitled now'), entitlementReason(data.subscriptions),
      data.entitlements ? el('span', { class: 'named' }, activeEntitlements(data.entitlements)) : null),
    actions,
    named,
    data.subscriptions.map((state) => subscriptionCard(state, context, scope)),
    retentionRequests(retention.retention_requests));
}

// The customer's retention requests, latest first: when Apple asked, for which subscription and
// product, in which locale, what the server answered and by which rule.
function retentionRequests(events) {
  const rows = events.map((event) => {
    const request = event.retention_request;
    return el('tr', { 'data-request-identifier': request.request_identifier || '' },
      el('td', {}, when(event.occurred_at)),
      el('td', {}, el('a', { href: '#/subscription/' + encodeURIComponent(event.original_transaction_id) }, event.original_transaction_id),
        event.environment !== 'Production' ? [' ', el('span', { class: 'badge environment' }, event.environment)] : null),
      el('td', { class: 'mono' }, request.product_id),
      el('td', {}, request.user_locale || '—'),
      el('td', { 'data-field': 'answer' }, retentionAnswer(request.answer)),
      el('td', {}, request.rule === null ? '—' : 'rule ' + request.rule));
  });
  return el('section', { class: 'card retention-requests' }, el('h2', {}, 'Retention requests'),
    rows.length
      ? el('div', { class: 'scroll' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Requested'), el('th', {}, 'Subscription'), el('th', {}, 'Product'),
          el('th', {}, 'Locale'), el('th', {}, 'Answer'), el('th', {}, 'Rule'))),
        el('tbody', {}, rows)))
      : el('p', { class: 'muted' }, 'The customer has not reached the App Store\'s cancel screen (no Get Retention Message request names their subscriptions).'));
}

/**
 * A subscription's page, by its original transaction id (or a renewal's transaction id).
 * @param {string} originalTransactionId
 * @param {object} context The router's: `api`, `redrawOnResize`.
 * @returns {Promise<Node>}
 */
export async function renderSubscription(originalTransactionId, context) {
  const path = '/v1/subscriptions/' + encodeURIComponent(originalTransactionId);
  const allowed = await context.access.scope();
  // The id in each app and environment it is stored in (Production and Sandbox are two
  // subscriptions): a card each.
  const found = await context.api('/v1/search?q=' + encodeURIComponent(originalTransactionId));
  const keys = found.matches.filter((match) => match.type === 'subscription').flatMap((match) => match.subscriptions);
  let states = await Promise.all(keys.map((key) => context.api(path + '?bundle_id=' + encodeURIComponent(key.bundle_id)
    + '&environment=' + encodeURIComponent(key.environment))));
  if (!keys.length) {
    try {
      states = [await context.api(path)];
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }
  return el('div', {}, el('h1', {}, 'Subscription ', el('code', {}, originalTransactionId)),
    states.length > 1 ? el('p', { class: 'muted' }, states.length + ' subscriptions have this original transaction id, one per app and environment.') : null,
    states.length ? states.map((state) => subscriptionCard(state, context, allowed)) : el('p', { class: 'muted' }, 'Nothing of it is known now.'));
}

// A subscription's card, with the actions the scope allows; its timeline is read and drawn once
// the card is on the page.
function subscriptionCard(state, { api, redrawOnResize, reroute }, scope) {
  const id = state.original_transaction_id;
  const timeline = el('div', { class: 'timeline-box' }, el('p', { class: 'muted' }, 'Loading the timeline…'));
  const asOf = el('div', { class: 'panel asof-panel' });
  const record = el('div', { class: 'panel record-panel' });
  const card = el('section', { class: 'card subscription', 'data-original-transaction-id': id, 'data-environment': state.environment },
    el('h2', {}, el('span', { class: 'mono' }, state.product_id || '—'), ' ', el('span', { class: 'badge ' + state.status }, statusWords(state.status)),
      state.environment !== 'Production' ? [' ', el('span', { class: 'badge environment' }, state.environment)] : null),
    el('p', { class: 'muted' }, 'Original transaction id ', el('code', {}, id), ' · ', state.environment, ' · ', state.bundle_id,
      state.app_account_token
        ? [' · appAccountToken ', el('a', { href: '#/customer/' + encodeURIComponent(state.app_account_token) }, state.app_account_token)]
        : null),
    actionBar(scope, [{ name: 'sync-subscription', label: 'Sync with Apple', needs: 'write', run: async () => {
      const query = '?bundle_id=' + encodeURIComponent(state.bundle_id) + '&environment=' + encodeURIComponent(state.environment);
      await api('/v1/subscriptions/' + encodeURIComponent(id) + '/sync' + query, { method: 'POST' });
      reroute();
      return null;
    } }]),
    timeline, asOf, record, el('h3', {}, 'State now'), stateList(state, STATE_FIELDS));
  api('/v1/subscriptions/' + encodeURIComponent(id) + '/timeline').then((data) => {
    const mine = data.subscriptions.find((item) => item.bundle_id === state.bundle_id && item.environment === state.environment) || data.subscriptions[0];
    const draw = () => drawTimeline({ box: timeline, timeline: mine, now: data.now, originalTransactionId: id, asOfPanel: asOf, recordPanel: record, api });
    redrawOnResize(draw);
    draw();
  }).catch((error) => { timeline.replaceChildren(el('p', { class: 'error' }, 'The timeline failed: ' + error.message)); });
  return card;
}

