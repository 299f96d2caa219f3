// How the console writes what the API answers: instants in UTC, durations, statuses, the
// records' titles, the labels of the timeline, named entitlements and grants. Pure functions of their arguments (no DOM, no
// clock, not the viewer's time zone), tested by Server/Tests/ConsoleAssetsTests/format.test.mjs.

/** A subscription's statuses, in the order the overview lists them. */
export const STATUSES = ['active', 'grace_period', 'billing_retry', 'expired', 'revoked'];

const STATUS_WORDS = { active: 'Active', grace_period: 'Grace period', billing_retry: 'Billing retry', expired: 'Expired', revoked: 'Revoked' };

const MARK_WORDS = { revocation: 'Refund or revocation', product_change: 'Product change', auto_renew_off: 'Auto-renew turned off',
  auto_renew_on: 'Auto-renew turned on', renewal_product_change: 'Renews as another product' };

/** The months' short English names, January first. */
export const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// RFC 3339 with its zone, as the server writes every instant ("2024-05-01T09:30:00.000Z").
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The milliseconds since 1970 of an instant the server wrote.
 * @param {string | null | undefined} text RFC 3339 with a zone (`Z` or `±hh:mm`).
 * @returns {number} The instant, or `NaN` for anything else (a date without a zone would be read
 *   in the viewer's time zone, so it is no instant here).
 */
export function instant(text) {
  return typeof text === 'string' && INSTANT.test(text) ? Date.parse(text) : NaN;
}

/**
 * An instant to the minute in UTC: `2024-05-01 09:30 UTC` (seconds cut, not rounded).
 * @param {string | null | undefined} text An instant the server wrote.
 * @returns {string} `—` for none; the text as it is when it is no instant.
 */
export function when(text) {
  if (!text) return '—';
  const time = instant(text);
  return Number.isFinite(time) ? new Date(time).toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : String(text);
}

/**
 * A number of seconds in the largest unit that keeps it readable: `90 s`, `15 min`, `5 h`, `3 days`.
 * @param {number} seconds
 * @returns {string} Seconds below 2 minutes, minutes below 2 hours, hours below 2 days, then days.
 */
export function duration(seconds) {
  if (seconds < 120) return seconds + ' s';
  if (seconds < 7200) return Math.round(seconds / 60) + ' min';
  if (seconds < 172800) return Math.round(seconds / 3600) + ' h';
  return Math.round(seconds / 86400) + ' days';
}

/**
 * A status in words: `Grace period`.
 * @param {string} status A status the API wrote.
 * @returns {string} Its words, or the status as it is when the console does not know it.
 */
export function statusWords(status) {
  return Object.hasOwn(STATUS_WORDS, status) ? STATUS_WORDS[status] : status;
}

/**
 * A field of a subscription's state as the console shows it: dates (`…_date`, `as_of`) as
 * {@link when} writes them, `null` as `—`, anything else as its text.
 * @param {string} name The field's name.
 * @param {unknown} value Its value.
 * @returns {string}
 */
export function fieldText(name, value) {
  if (value === null) return '—';
  return typeof value === 'string' && /_date$|^as_of$/.test(name) ? when(value) : String(value);
}

/**
 * A notification's type and subtype: `DID_CHANGE_RENEWAL_STATUS · AUTO_RENEW_DISABLED`.
 * @returns {string} Empty when it has neither.
 */
export function notificationKind(type, subtype) {
  return [type, subtype].filter(Boolean).join(' · ');
}

/**
 * What a stored record is: its kind, then its notification's type and subtype, if any.
 * @param {{kind: string, notification_type?: string, notification_subtype?: string}} record
 * @returns {string}
 */
export function recordKind(record) {
  return [record.kind, record.notification_type, record.notification_subtype].filter(Boolean).join(' · ');
}

/**
 * A stored record's title: what it is and when the server received it.
 * @returns {string}
 */
export function recordTitle(record) {
  return recordKind(record) + ' · ' + when(record.received_at);
}

// The field whose date a status dates from, for the statuses that date from one.
const SINCE = { revoked: 'revocation_date', expired: 'expires_date', billing_retry: 'expires_date' };

/**
 * One subscription's state in a sentence: `premium.monthly: active until 2024-06-01 09:30 UTC,
 * will not renew`, `…: revoked since …`, `…: grace period until …`.
 * @param {object} state A subscription's state, as `GET /v1/subscriptions/{id}` answers it.
 * @returns {string}
 */
export function stateSentence(state) {
  const name = (state.product_id || state.original_transaction_id) + ': ' + statusWords(state.status).toLowerCase();
  if (state.status === 'grace_period') return name + ' until ' + when(state.grace_period_expires_date);
  if (state.status === 'active') {
    return name + (state.expires_date ? ' until ' + when(state.expires_date) : '') + (state.will_renew === false ? ', will not renew' : '');
  }
  const since = Object.hasOwn(SINCE, state.status) ? state[SINCE[state.status]] : null;
  return since ? name + ' since ' + when(since) : name;
}

/**
 * Why a customer is entitled or not: the subscriptions that entitle them, or, when none does,
 * every subscription's state.
 * @param {object[]} subscriptions The customer's subscriptions' states.
 * @returns {string}
 */
export function entitlementReason(subscriptions) {
  if (!subscriptions.length) return 'Nothing is linked to this customer id.';
  const entitling = subscriptions.filter((state) => state.entitled);
  return (entitling.length ? entitling : subscriptions).map(stateSentence).join('; ');
}

/**
 * Whether a paid period of the timeline is a free trial.
 * @returns {boolean}
 */
export function isFreeTrial(period) {
  return Boolean(period.offer && period.offer.discount_type === 'free_trial');
}

/**
 * A period's label on the timeline: `Paid period 7002 · premium.monthly · 2024-02-01 00:00 UTC – …`.
 * @returns {string}
 */
export function periodLabel(period) {
  return (isFreeTrial(period) ? 'Free trial' : 'Paid period') + ' ' + period.transaction_id + ' · ' + (period.product_id || '') + ' · ' +
    when(period.start) + ' – ' + (period.end ? when(period.end) : 'no end');
}

/**
 * A status span's label on the timeline: `Billing retry 2024-03-08 01:00 UTC – 2024-03-11 00:00 UTC`.
 * @returns {string} Ending `now and on` for the span that has not ended.
 */
export function spanLabel(span) {
  return statusWords(span.status) + ' ' + when(span.from) + ' – ' + (span.to ? when(span.to) : 'now and on');
}

/**
 * A mark's label on the timeline: what happened, when, the products, the reason.
 * @returns {string}
 */
export function markLabel(mark) {
  return (Object.hasOwn(MARK_WORDS, mark.kind) ? MARK_WORDS[mark.kind] : mark.kind) + ' · ' + when(mark.at) + (mark.product_id ? ' · ' + mark.product_id : '') +
    (mark.previous_product_id ? ' (was ' + mark.previous_product_id + ')' : '') + (mark.reason ? ' · ' + mark.reason : '');
}

/**
 * What a retention request was answered, from its `retention.requested` event's
 * `retention_request.answer`: `Offer TRIAL_SAVE on premium.monthly · message 5f1c…`,
 * `Switch to premium.yearly · message …`, `Message …`, or the product's default message.
 * @param {{kind: string, message_id: ?string, product_id: ?string, offer_id: ?string}} answer
 * @returns {string} The kind as it is when the console does not know it.
 */
export function retentionAnswer(answer) {
  const message = answer.message_id ? ' · message ' + answer.message_id : '';
  switch (answer.kind) {
    case 'message': return 'Message ' + answer.message_id;
    case 'alternate_product': return 'Switch to ' + answer.product_id + message;
    case 'promotional_offer': return 'Offer ' + answer.offer_id + ' on ' + answer.product_id + message;
    case 'default_message': return 'The product\'s default message';
    case 'none': return 'No rule answered: the product\'s default message';
    default: return answer.kind;
  }
}

const SOURCE_WORDS = { subscription: 'Subscription', purchase: 'Purchase', pass: 'Pass', grant: 'Grant' };

/**
 * The named entitlements active now, in a sentence: `Named entitlements active now: pro, remove_ads.`
 * @param {Record<string, {active: boolean}>} entitlements The `entitlements` member of
 *   `GET /v1/customers/{id}/entitlements`, by name, in its order.
 * @returns {string} `No named entitlement is active now.` when none is.
 */
export function activeEntitlements(entitlements) {
  const active = Object.keys(entitlements).filter((name) => entitlements[name].active);
  return active.length ? 'Named entitlements active now: ' + active.join(', ') + '.' : 'No named entitlement is active now.';
}

/**
 * Until when a named entitlement gives access, or when it last did: `until 2025-11-15 08:00 UTC`,
 * `no end` (a lifetime purchase or grant), `ended …`.
 * @param {{active: boolean, expires_date: ?string, source: ?string}} entitlement
 * @returns {string} `never given` when nothing ever gave it; `—` when it is not active and has no
 *   end (a lifetime purchase revoked).
 */
export function entitlementUntil(entitlement) {
  const expires = entitlement.expires_date;
  if (entitlement.active) return expires ? 'until ' + when(expires) : 'no end';
  if (expires) return 'ended ' + when(expires);
  return entitlement.source ? '—' : 'never given';
}

/**
 * What gives a named entitlement, or last gave it: `Subscription 7000 · premium.monthly · active,
 * will not renew`, `Purchase 7100 · pro.lifetime`, `Pass 7200 · pass.30d`, `Grant of
 * 2025-10-15 08:02 UTC by support`.
 * @param {{source: ?string, product_id: ?string, original_transaction_id: ?string, grant_id: ?string,
 *   status: ?string, will_renew: ?boolean}} entitlement
 * @param {{grant_id: string, granted_at: string, granted_by: string}[]} [grants] The customer's
 *   grants, to name a grant by when and by whom it was made (by its id when it is not among them).
 * @returns {string} `—` when nothing ever did; a source the console does not know, as it is.
 */
export function entitlementSource(entitlement, grants = []) {
  const source = entitlement.source;
  if (!source) return '—';
  if (source === 'grant') {
    const grant = grants.find((item) => item.grant_id === entitlement.grant_id);
    return grant ? 'Grant of ' + doneBy(grant.granted_at, grant.granted_by) : 'Grant ' + entitlement.grant_id;
  }
  if (!Object.hasOwn(SOURCE_WORDS, source)) return source;
  const parts = [SOURCE_WORDS[source] + ' ' + (entitlement.original_transaction_id || '—')];
  if (entitlement.product_id) parts.push(entitlement.product_id);
  if (entitlement.status) parts.push(statusWords(entitlement.status).toLowerCase() + (entitlement.will_renew === false ? ', will not renew' : ''));
  return parts.join(' · ');
}

const GRANT_STATE_WORDS = { active: 'Active', ended: 'Ended', expired: 'Expired' };

/**
 * Where a grant stands now: `active`; `ended` by hand (`DELETE …/grants/{id}`); else `expired`.
 * @param {{active: boolean, ended_at: ?string}} grant As `GET /v1/customers/{id}/grants` answers it.
 * @returns {'active' | 'ended' | 'expired'}
 */
export function grantState(grant) {
  if (grant.active) return 'active';
  return grant.ended_at ? 'ended' : 'expired';
}

/**
 * A grant's state in words: `Active`, `Ended`, `Expired`.
 * @param {string} state As {@link grantState} answers it.
 * @returns {string}
 */
export function grantStateWords(state) {
  return Object.hasOwn(GRANT_STATE_WORDS, state) ? GRANT_STATE_WORDS[state] : state;
}

/**
 * How long a grant was made for: `Lifetime`, or `Until 2025-11-15 08:00 UTC`.
 * @param {{lifetime: boolean, expires_date: ?string}} grant
 * @returns {string}
 */
export function grantLength(grant) {
  return grant.lifetime ? 'Lifetime' : 'Until ' + when(grant.expires_date);
}

/**
 * When something was done and by whom: `2025-10-15 08:02 UTC by support`.
 * @param {?string} at An instant the server wrote.
 * @param {?string} by A token's name (`open` on a server without tokens).
 * @returns {string} `—` when it was not done.
 */
export function doneBy(at, by) {
  if (!at) return '—';
  return when(at) + (by ? ' by ' + by : '');
}
