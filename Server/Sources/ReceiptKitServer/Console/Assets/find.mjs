// Finding (#/find/TEXT, from GET /v1/search?q=TEXT): a customer id, an appAccountToken, an
// original transaction id or any transaction id stored. One match opens directly; several are
// listed.

import { el } from './dom.mjs';

/**
 * The pages the search's matches lead to, one per customer and one per subscription.
 * @param {object[]} matches As `GET /v1/search` answers them.
 * @returns {{href: string, text: string, id: string, where?: string}[]} The address, the words
 *   before the id, the id, and for a subscription its app and environment.
 */
export function searchLinks(matches) {
  const links = [];
  for (const match of matches) {
    if (match.type === 'customer') {
      links.push({ href: '#/customer/' + encodeURIComponent(match.customer_id), text: 'Customer (customer id or appAccountToken) ', id: match.customer_id });
    } else {
      for (const key of match.subscriptions) {
        const text = match.type === 'transaction'
          ? 'Subscription with transaction ' + match.transaction_id + ': original transaction id '
          : 'Subscription, original transaction id ';
        links.push({ href: '#/subscription/' + encodeURIComponent(key.original_transaction_id), text, id: key.original_transaction_id, where: appAndEnvironment(key) });
      }
    }
  }
  return links;
}

/**
 * Where a subscription lives: its app, and its environment.
 * @param {{bundle_id: string, environment: string}} key
 * @returns {string} `com.example.app · Sandbox`.
 */
export function appAndEnvironment(key) {
  return key.bundle_id + ' · ' + key.environment;
}

/**
 * The search's answer: the one match's page, opened in place of this address, or the list.
 * @param {string} query What the operator typed.
 * @param {{api: (path: string) => Promise<any>, reroute: () => void}} context
 * @returns {Promise<Node>}
 */
export async function renderFind(query, { api, reroute }) {
  document.getElementById('query').value = query;
  const data = await api('/v1/search?q=' + encodeURIComponent(query));
  const links = searchLinks(data.matches);
  if (links.length === 1) {
    history.replaceState(null, '', links[0].href);
    reroute();
    return el('p', { class: 'muted' }, 'Opening…');
  }
  return el('section', { class: 'card' }, el('h1', {}, 'Find'),
    links.length ? el('ul', { class: 'results' }, links.map((link) => el('li', {}, link.text, el('a', { href: link.href }, link.id),
      link.where ? el('span', { class: 'muted' }, ' · ' + link.where) : null)))
      : el('p', { class: 'none' }, 'Nothing stored matches ', el('code', {}, query),
        ' as a customer id, an appAccountToken, an original transaction id or a transaction id.'));
}
