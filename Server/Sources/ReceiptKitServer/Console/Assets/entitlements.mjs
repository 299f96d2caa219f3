// A customer's named entitlements and grants, on their page when the server has an entitlements
// file (the `entitlements` member of GET /v1/customers/{id}/entitlements, absent without one):
// each entitlement, active or not, until when and what gives it; the grants made by hand
// (GET /v1/customers/{id}/grants), latest first; and for a token whose scope allows writing, a
// form that makes a grant (POST …/grants) and an End button on each active grant
// (DELETE …/grants/{grant_id}), after either of which the page is read again. What is active is
// the server's answer (ReceiptKit's rules), never decided here.
// The pure parts are tested by Server/Tests/ConsoleAssetsTests/entitlements.test.mjs.

import { allows, runAction } from './access.mjs';
import { el } from './dom.mjs';
import { doneBy, entitlementSource, entitlementUntil, grantLength, grantState, grantStateWords, instant } from './format.mjs';

/** The durations the grant form suggests (ISO 8601) and their words; any other may be typed. */
export const GRANT_DURATIONS = [['P7D', '1 week'], ['P1M', '1 month'], ['P3M', '3 months'], ['P1Y', '1 year']];

/** How long a grant lasts, as the form offers it: by the member of the body each sets. */
export const GRANT_LENGTHS = ['duration', 'expires_date', 'lifetime'];

/** The longest reason the server keeps (GrantController.maximumReasonLength). */
export const MAXIMUM_REASON_LENGTH = 1000;

/**
 * The instant of the form's expiry, which the operator gives in UTC, as the console writes every
 * instant: `2025-12-01T09:30` (a `datetime-local` input's value) is `2025-12-01T09:30:00Z`.
 * @param {string} text The input's value.
 * @returns {string} The instant in UTC; the text, trimmed, as it is when it is not a date and a
 *   time without a zone (the server's answer then says what is wrong with it).
 */
export function expiryInstant(text) {
  const value = text.trim();
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2}(\.\d+)?)?$/.exec(value);
  return match ? match[1] + 'T' + match[2] + (match[3] || ':00') + 'Z' : value;
}

/**
 * The body of `POST /v1/customers/{id}/grants` from the form's fields: the entitlement, the one
 * member the length chosen sets, and the reason when one is given.
 * @param {{entitlement: string, length: string, duration: string, expires: string, reason: string}} fields
 *   `length` one of {@link GRANT_LENGTHS}; `duration` ISO 8601 (`P1M`; `p1m` in capitals); `expires` as
 *   {@link expiryInstant} reads it.
 * @returns {{entitlement: string, duration?: string, expires_date?: string, lifetime?: true, reason?: string}}
 * @throws {RangeError} For a length that is not one of {@link GRANT_LENGTHS}.
 */
export function grantBody({ entitlement, length, duration, expires, reason }) {
  const body = { entitlement };
  switch (length) {
    case 'duration': body.duration = isoDuration(duration); break;
    case 'expires_date': body.expires_date = expiryInstant(expires); break;
    case 'lifetime': body.lifetime = true; break;
    default: throw new RangeError('a grant lasts for a duration, until a date or for life, not ' + length);
  }
  const why = reason.trim();
  if (why) body.reason = why;
  return body;
}

// A duration as typed, trimmed, and in capitals when it is ISO 8601's letters and numbers (`p7d`);
// anything else as it is typed, for the server's refusal to quote.
function isoDuration(text) {
  const value = text.trim();
  return /^p[\dymwdhs.,t]+$/i.test(value) ? value.toUpperCase() : value;
}

/**
 * The grants latest first (the API lists them oldest first); grants made at one instant in the
 * reverse of the API's order.
 * @param {{granted_at: string}[]} grants
 * @returns {object[]} A new array.
 */
export function latestFirst(grants) {
  return grants.map((grant, index) => ({ grant, index, at: instant(grant.granted_at) }))
    .sort((a, b) => (b.at - a.at) || (b.index - a.index))
    .map((item) => item.grant);
}

/**
 * The customer's named entitlements and grants: two cards.
 * @param {object} options
 * @param {string} options.path The customer's path, `/v1/customers/ID`.
 * @param {Record<string, object>} options.entitlements The `entitlements` member, by name.
 * @param {object[]} options.grants `GET …/grants`' `grants`.
 * @param {string} options.scope The token's scope: the form and the End buttons for `write`.
 * @param {(path: string, options?: object) => Promise<any>} options.api
 * @param {() => void} options.reroute Draws the page again.
 * @returns {HTMLElement[]}
 */
export function entitlementCards({ path, entitlements, grants, scope, api, reroute }) {
  const names = Object.keys(entitlements);
  const rows = names.map((name) => {
    const entitlement = entitlements[name];
    return el('tr', { 'data-entitlement': name, 'data-active': String(entitlement.active) },
      el('td', { class: 'mono' }, name),
      el('td', { 'data-field': 'now' }, el('span', { class: 'badge ' + (entitlement.active ? 'active' : 'inactive') },
        entitlement.active ? 'Active' : 'Not active'), ' ', entitlementUntil(entitlement)),
      el('td', { 'data-field': 'source' }, entitlementSource(entitlement, grants)));
  });
  const named = el('section', { class: 'card named-entitlements' }, el('h2', {}, 'Entitlements'),
    rows.length
      ? el('div', { class: 'scroll' }, el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Entitlement'), el('th', {}, 'Now'), el('th', {}, 'Given by'))),
        el('tbody', {}, rows)))
      : el('p', { class: 'muted' }, 'RECEIPTKIT_ENTITLEMENTS_FILE names no entitlement.'));
  const canWrite = allows(scope, 'write');
  return [named, el('section', { class: 'card grants' }, el('h2', {}, 'Grants'),
    grantTable(latestFirst(grants), canWrite, path, api, reroute),
    canWrite && names.length ? grantForm(names, path, api, reroute) : null)];
}

// The grants, each with an End button while it is active (write).
function grantTable(grants, canWrite, path, api, reroute) {
  if (!grants.length) return el('p', { class: 'muted' }, 'No grant has been made to this customer.');
  const status = el('p', { class: 'action-status', role: 'status' });
  const rows = grants.map((grant) => {
    const state = grantState(grant);
    let end = null;
    if (canWrite && state === 'active') {
      end = el('button', { class: 'quiet', type: 'button', 'data-action': 'end-grant' }, 'End');
      end.addEventListener('click', () => runAction(end, status, 'End grant', async () => {
        await api(path + '/grants/' + encodeURIComponent(grant.grant_id), { method: 'DELETE' });
        reroute();
        return null;
      }));
    }
    return el('tr', { 'data-grant-id': grant.grant_id, 'data-state': state },
      el('td', { class: 'mono' }, grant.entitlement),
      el('td', {}, el('span', { class: 'badge ' + state }, grantStateWords(state))),
      el('td', {}, grantLength(grant)),
      el('td', {}, doneBy(grant.granted_at, grant.granted_by)),
      el('td', {}, doneBy(grant.ended_at, grant.ended_by)),
      el('td', { 'data-field': 'reason' }, grant.reason || '—'),
      canWrite ? el('td', {}, end) : null);
  });
  return el('div', {}, el('div', { class: 'scroll' }, el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Entitlement'), el('th', {}, 'State'), el('th', {}, 'Lasts'), el('th', {}, 'Granted'),
      el('th', {}, 'Ended'), el('th', {}, 'Reason'), canWrite ? el('th', {}, '') : null)),
    el('tbody', {}, rows))), status);
}

// The form that makes a grant: which entitlement, for how long (a duration, until an instant in
// UTC, or for life), why. The server checks it; its reason for a refusal is shown under the form.
function grantForm(names, path, api, reroute) {
  const entitlement = el('select', { name: 'entitlement' }, names.map((name) => el('option', { value: name }, name)));
  const lengths = Object.fromEntries(GRANT_LENGTHS.map((length) =>
    [length, el('input', { type: 'radio', name: 'grant-length', value: length, checked: length === 'duration' })]));
  const duration = el('input', { name: 'duration', value: 'P1M', size: 6, list: 'grant-durations', autocomplete: 'off', spellcheck: 'false',
    'aria-label': 'Duration (ISO 8601)' });
  const expires = el('input', { name: 'expires', type: 'datetime-local', 'aria-label': 'Expiry (UTC)' });
  // Typing in a length's field chooses that length.
  duration.addEventListener('focus', () => { lengths.duration.checked = true; });
  expires.addEventListener('focus', () => { lengths.expires_date.checked = true; });
  const reason = el('input', { name: 'reason', maxlength: MAXIMUM_REASON_LENGTH, autocomplete: 'off', placeholder: 'Why (kept with the grant)',
    'aria-label': 'Reason' });
  const submit = el('button', { type: 'submit', 'data-action': 'grant' }, 'Grant');
  const status = el('p', { class: 'action-status', role: 'status' });
  const form = el('form', { class: 'grant-form' },
    el('h3', {}, 'Grant an entitlement'),
    el('div', { class: 'fields' },
      el('label', {}, 'Entitlement ', entitlement),
      el('fieldset', {}, el('legend', {}, 'For'),
        el('label', {}, lengths.duration, ' a duration ', duration),
        el('datalist', { id: 'grant-durations' }, GRANT_DURATIONS.map(([value, words]) => el('option', { value }, words))),
        el('label', {}, lengths.expires_date, ' until ', expires, ' UTC'),
        el('label', {}, lengths.lifetime, ' lifetime')),
      el('label', { class: 'reason' }, 'Reason ', reason),
      submit),
    status);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const length = GRANT_LENGTHS.find((name) => lengths[name].checked);
    runAction(submit, status, 'Grant', async () => {
      const body = grantBody({ entitlement: entitlement.value, length, duration: duration.value, expires: expires.value, reason: reason.value });
      await api(path + '/grants', { method: 'POST', body });
      reroute();
      return null;
    });
  });
  return form;
}
