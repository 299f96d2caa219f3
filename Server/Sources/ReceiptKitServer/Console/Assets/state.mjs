// A subscription's state as the console lists it: the fields of GET /v1/subscriptions/{id},
// now on a subscription's card and as of an instant under its timeline.

import { el } from './dom.mjs';
import { fieldText } from './format.mjs';

/** The fields a card lists of the state now, in this order. */
export const STATE_FIELDS = ['status', 'entitled', 'product_id', 'expires_date', 'grace_period_expires_date', 'will_renew', 'auto_renew_product_id',
  'expiration_intent', 'is_trial', 'revocation_date', 'revocation_reason', 'latest_transaction_id', 'app_account_token',
  'ownership_type', 'last_signed_date', 'as_of'];

/** The fields listed of the state as of an instant, in this order. */
export const AS_OF_FIELDS = ['status', 'entitled', 'expires_date', 'grace_period_expires_date', 'will_renew',
  'latest_transaction_id', 'revocation_date', 'last_signed_date', 'as_of'];

/**
 * A subscription's state as a list of fields and values.
 * @param {object} state As `GET /v1/subscriptions/{id}` answers it.
 * @param {string[]} fields The fields to list, in order; those the state lacks are left out.
 * @returns {HTMLElement} A `dl.state`, each value's `dd` carrying its field's name in `data-field`.
 */
export function stateList(state, fields) {
  return el('dl', { class: 'state' }, fields.filter((name) => name in state).map((name) =>
    [el('dt', {}, name), el('dd', { 'data-field': name }, fieldText(name, state[name]))]));
}
