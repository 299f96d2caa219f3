// A customer (#/customer/ID, from GET /v1/customers/{id}/entitlements): entitled now or not and
// why, then a card per subscription; and a subscription alone (#/subscription/ID). A card shows
// the subscription's timeline, the state as of an instant clicked on it, the records behind it,
// and its state now.

import { el } from './dom.mjs';
import { entitlementReason, statusWords } from './format.mjs';
import { STATE_FIELDS, stateList } from './state.mjs';
import { drawTimeline } from './timeline.mjs';

/**
 * A customer's page.
 * @param {string} customerId
 * @param {object} context The router's: `api`, `redrawOnResize`.
 * @returns {Promise<Node>}
 */
export async function renderCustomer(customerId, context) {
  const data = await context.api('/v1/customers/' + encodeURIComponent(customerId) + '/entitlements');
  return el('div', {},
    el('h1', {}, 'Customer ', el('code', { class: 'customer-id' }, customerId)),
    el('div', { class: 'entitlement ' + (data.entitled ? 'entitled' : 'not-entitled') },
      el('strong', {}, data.entitled ? 'Entitled now' : 'Not entitled now'), entitlementReason(data.subscriptions)),
    data.subscriptions.map((state) => subscriptionCard(state, context)));
}

/**
 * A subscription's page, by its original transaction id (or a renewal's transaction id).
 * @param {string} originalTransactionId
 * @param {object} context The router's: `api`, `redrawOnResize`.
 * @returns {Promise<Node>}
 */
export async function renderSubscription(originalTransactionId, context) {
  const path = '/v1/subscriptions/' + encodeURIComponent(originalTransactionId);
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
    states.length ? states.map((state) => subscriptionCard(state, context)) : el('p', { class: 'muted' }, 'Nothing of it is known now.'));
}

// A subscription's card; its timeline is read and drawn once the card is on the page.
function subscriptionCard(state, { api, redrawOnResize }) {
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
    timeline, asOf, record, el('h3', {}, 'State now'), stateList(state, STATE_FIELDS));
  api('/v1/subscriptions/' + encodeURIComponent(id) + '/timeline').then((data) => {
    const mine = data.subscriptions.find((item) => item.bundle_id === state.bundle_id && item.environment === state.environment) || data.subscriptions[0];
    const draw = () => drawTimeline({ box: timeline, timeline: mine, now: data.now, originalTransactionId: id, asOfPanel: asOf, recordPanel: record, api });
    redrawOnResize(draw);
    draw();
  }).catch((error) => { timeline.replaceChildren(el('p', { class: 'error' }, 'The timeline failed: ' + error.message)); });
  return card;
}
