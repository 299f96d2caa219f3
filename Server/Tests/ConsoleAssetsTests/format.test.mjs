// format.mjs: instants in UTC whatever the viewer's zone, durations, statuses, sentences, labels.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inEachTimeZone, ZONES } from './support.mjs';
import {
  activeEntitlements, doneBy, duration, entitlementReason, entitlementSource, entitlementUntil, fieldText, grantLength, grantState,
  grantStateWords, instant, isFreeTrial, markLabel, notificationKind, periodLabel, recordKind, recordTitle, retentionAnswer,
  spanLabel, stateSentence, statusWords, STATUSES, when,
} from '../../Sources/ReceiptKitServer/Console/Assets/format.mjs';

describe('instant', () => {
  test('reads RFC 3339 with Z or an offset, with or without seconds and fractions', () => {
    assert.equal(instant('2024-05-01T09:30:00.000Z'), Date.UTC(2024, 4, 1, 9, 30));
    assert.equal(instant('2024-05-01T09:30:15.250Z'), Date.UTC(2024, 4, 1, 9, 30, 15, 250));
    assert.equal(instant('2024-05-01T09:30Z'), Date.UTC(2024, 4, 1, 9, 30));
    assert.equal(instant('2024-05-01T11:30:00+02:00'), Date.UTC(2024, 4, 1, 9, 30));
    assert.equal(instant('2024-05-01T04:00:00-05:30'), Date.UTC(2024, 4, 1, 9, 30));
  });

  test('is NaN for a date without a zone, which a browser would read in its own zone, and for no text', () => {
    for (const text of ['2024-05-01T09:30:00', '2024-05-01', '1714555800', 'soon', '', null, undefined, 1714555800000]) {
      assert.ok(Number.isNaN(instant(text)), String(text));
    }
  });

  test('does not depend on the viewer\'s time zone', () => {
    inEachTimeZone(ZONES, (zone) => {
      assert.equal(instant('2024-03-10T10:00:00.000Z'), Date.UTC(2024, 2, 10, 10), zone);
      assert.equal(instant('2024-03-10T10:00:00+09:00'), Date.UTC(2024, 2, 10, 1), zone);
    });
  });
});

describe('when', () => {
  test('writes an instant to the minute in UTC, cutting the seconds', () => {
    assert.equal(when('2024-05-01T09:30:00.000Z'), '2024-05-01 09:30 UTC');
    assert.equal(when('2024-12-31T23:59:59.999Z'), '2024-12-31 23:59 UTC');
    assert.equal(when('2024-01-01T00:00Z'), '2024-01-01 00:00 UTC');
  });

  test('writes an instant given with an offset in UTC, across a day and a leap day', () => {
    assert.equal(when('2024-03-01T01:30:00+02:00'), '2024-02-29 23:30 UTC');
    assert.equal(when('2023-12-31T20:00:00-05:00'), '2024-01-01 01:00 UTC');
  });

  test('writes the same in every time zone the viewer may be in', () => {
    const expected = ['2024-03-10 09:59 UTC', '2024-10-27 01:30 UTC', '2024-02-29 23:30 UTC'];
    inEachTimeZone(ZONES, (zone) => {
      assert.deepEqual(['2024-03-10T09:59:30Z', '2024-10-27T01:30:00.000Z', '2024-03-01T01:30:00+02:00'].map(when), expected, zone);
    });
  });

  test('writes — for no instant, and what is no instant as it is, never as UTC', () => {
    for (const none of [null, undefined, '']) assert.equal(when(none), '—');
    assert.equal(when('2024-05-01T09:30:00'), '2024-05-01T09:30:00');
    assert.equal(when('not a date'), 'not a date');
  });
});

describe('duration', () => {
  test('seconds below 2 minutes', () => {
    assert.equal(duration(0), '0 s');
    assert.equal(duration(1), '1 s');
    assert.equal(duration(119), '119 s');
  });

  test('minutes from 2 minutes, rounded, below 2 hours', () => {
    assert.equal(duration(120), '2 min');
    assert.equal(duration(149), '2 min');
    assert.equal(duration(150), '3 min');
    assert.equal(duration(7199), '120 min');
  });

  test('hours from 2 hours, below 2 days; then days', () => {
    assert.equal(duration(7200), '2 h');
    assert.equal(duration(172799), '48 h');
    assert.equal(duration(172800), '2 days');
    assert.equal(duration(90 * 86400 + 43199), '90 days');
    assert.equal(duration(90 * 86400 + 43200), '91 days');
  });

  test('a negative lag (a clock behind Apple\'s) stays in seconds, as it is', () => {
    assert.equal(duration(-5), '-5 s');
  });
});

describe('statuses and fields', () => {
  test('each status in words; one the console does not know, as it is', () => {
    assert.deepEqual(STATUSES.map(statusWords), ['Active', 'Grace period', 'Billing retry', 'Expired', 'Revoked']);
    assert.equal(statusWords('paused'), 'paused');
    // A name every object has is not a status the console knows.
    assert.equal(statusWords('constructor'), 'constructor');
    assert.equal(statusWords('toString'), 'toString');
  });

  test('a field\'s value: dates written in UTC, null as —, the rest as text', () => {
    assert.equal(fieldText('expires_date', '2024-06-01T09:30:00.000Z'), '2024-06-01 09:30 UTC');
    assert.equal(fieldText('grace_period_expires_date', '2024-06-17T09:30:00.000Z'), '2024-06-17 09:30 UTC');
    assert.equal(fieldText('as_of', '2024-06-01T00:00:00.000Z'), '2024-06-01 00:00 UTC');
    assert.equal(fieldText('expires_date', null), '—');
    assert.equal(fieldText('will_renew', false), 'false');
    assert.equal(fieldText('entitled', true), 'true');
    assert.equal(fieldText('expiration_intent', 1), '1');
    // Only the date fields are dates, whatever a value looks like.
    assert.equal(fieldText('app_account_token', '2024-06-01T00:00:00.000Z'), '2024-06-01T00:00:00.000Z');
    assert.equal(fieldText('last_signed_date_source', '2024-06-01T00:00:00.000Z'), '2024-06-01T00:00:00.000Z');
  });
});

describe('sentences', () => {
  const base = { product_id: 'premium.monthly', original_transaction_id: '7000', entitled: false };

  test('a subscription\'s state in a sentence, per status', () => {
    assert.equal(stateSentence({ ...base, status: 'active', entitled: true, expires_date: '2024-06-01T09:30:00.000Z', will_renew: true }),
      'premium.monthly: active until 2024-06-01 09:30 UTC');
    assert.equal(stateSentence({ ...base, status: 'active', entitled: true, expires_date: '2024-06-01T09:30:00.000Z', will_renew: false }),
      'premium.monthly: active until 2024-06-01 09:30 UTC, will not renew');
    assert.equal(stateSentence({ ...base, status: 'active', entitled: true, expires_date: null }), 'premium.monthly: active');
    assert.equal(stateSentence({ ...base, status: 'grace_period', entitled: true, grace_period_expires_date: '2024-06-17T09:30:00.000Z' }),
      'premium.monthly: grace period until 2024-06-17 09:30 UTC');
    assert.equal(stateSentence({ ...base, status: 'billing_retry', expires_date: '2024-06-01T09:30:00.000Z' }),
      'premium.monthly: billing retry since 2024-06-01 09:30 UTC');
    assert.equal(stateSentence({ ...base, status: 'expired', expires_date: '2024-06-01T09:30:00.000Z' }),
      'premium.monthly: expired since 2024-06-01 09:30 UTC');
    assert.equal(stateSentence({ ...base, status: 'revoked', revocation_date: '2024-05-20T12:00:00.000Z', expires_date: '2024-06-01T09:30:00.000Z' }),
      'premium.monthly: revoked since 2024-05-20 12:00 UTC');
    assert.equal(stateSentence({ ...base, status: 'expired', expires_date: null }), 'premium.monthly: expired');
    assert.equal(stateSentence({ ...base, status: 'paused' }), 'premium.monthly: paused');
  });

  test('a subscription without a product id is named by its original transaction id', () => {
    assert.equal(stateSentence({ ...base, product_id: null, status: 'expired' }), '7000: expired');
  });

  test('a customer\'s reason: the subscriptions that entitle, else all of them; none linked', () => {
    const active = { ...base, product_id: 'a', status: 'active', entitled: true, expires_date: null };
    const expired = { ...base, product_id: 'b', status: 'expired', expires_date: null };
    const revoked = { ...base, product_id: 'c', status: 'revoked', revocation_date: null };
    assert.equal(entitlementReason([expired, active]), 'a: active');
    assert.equal(entitlementReason([expired, revoked]), 'b: expired; c: revoked');
    assert.equal(entitlementReason([]), 'Nothing is linked to this customer id.');
  });
});

describe('records and labels', () => {
  const refund = {
    kind: 'notification', notification_type: 'REFUND', notification_subtype: null, received_at: '2024-04-20T00:00:00.000Z',
  };

  test('a record\'s kind and title; a notification\'s type and subtype', () => {
    assert.equal(recordKind(refund), 'notification · REFUND');
    assert.equal(recordKind({ kind: 'transaction' }), 'transaction');
    assert.equal(recordTitle(refund), 'notification · REFUND · 2024-04-20 00:00 UTC');
    assert.equal(notificationKind('DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED'), 'DID_CHANGE_RENEWAL_STATUS · AUTO_RENEW_DISABLED');
    assert.equal(notificationKind('REFUND', null), 'REFUND');
    assert.equal(notificationKind(null, undefined), '');
  });

  test('a period: free trial or paid, with or without an end', () => {
    const trial = { transaction_id: '7001', product_id: 'premium.monthly', start: '2024-01-01T00:00:00.000Z', end: '2024-01-08T00:00:00.000Z',
      offer: { discount_type: 'free_trial' } };
    assert.equal(isFreeTrial(trial), true);
    assert.equal(periodLabel(trial), 'Free trial 7001 · premium.monthly · 2024-01-01 00:00 UTC – 2024-01-08 00:00 UTC');
    const open = { transaction_id: '7002', product_id: null, start: '2024-01-08T00:00:00.000Z', end: null, offer: { discount_type: 'pay_as_you_go' } };
    assert.equal(isFreeTrial(open), false);
    assert.equal(isFreeTrial({ ...open, offer: null }), false);
    assert.equal(periodLabel(open), 'Paid period 7002 ·  · 2024-01-08 00:00 UTC – no end');
  });

  test('a status span, ended or going on', () => {
    assert.equal(spanLabel({ status: 'billing_retry', from: '2024-03-08T01:00:00.000Z', to: '2024-03-11T00:00:00.000Z' }),
      'Billing retry 2024-03-08 01:00 UTC – 2024-03-11 00:00 UTC');
    assert.equal(spanLabel({ status: 'active', from: '2024-03-11T00:00:00.000Z', to: null }), 'Active 2024-03-11 00:00 UTC – now and on');
  });

  test('a mark, with its products and reason; a kind the console does not know, as it is', () => {
    assert.equal(markLabel({ kind: 'revocation', at: '2024-04-20T00:00:00.000Z', reason: 'refunded' }),
      'Refund or revocation · 2024-04-20 00:00 UTC · refunded');
    assert.equal(markLabel({ kind: 'product_change', at: '2024-02-01T00:00:00.000Z', product_id: 'premium.yearly', previous_product_id: 'premium.monthly' }),
      'Product change · 2024-02-01 00:00 UTC · premium.yearly (was premium.monthly)');
    assert.equal(markLabel({ kind: 'price_increase', at: '2024-02-01T00:00:00.000Z' }), 'price_increase · 2024-02-01 00:00 UTC');
  });
});

describe('retentionAnswer', () => {
  const message = '5f1c2d3e-0000-4000-8000-000000000001';

  test('names what the customer was shown, with the message and, for an offer or a switch, the product', () => {
    assert.equal(retentionAnswer({ kind: 'message', message_id: message, product_id: null, offer_id: null }), 'Message ' + message);
    assert.equal(retentionAnswer({ kind: 'alternate_product', message_id: message, product_id: 'premium.yearly', offer_id: null }),
      'Switch to premium.yearly · message ' + message);
    assert.equal(retentionAnswer({ kind: 'promotional_offer', message_id: message, product_id: 'premium.monthly', offer_id: 'TRIAL_SAVE' }),
      'Offer TRIAL_SAVE on premium.monthly · message ' + message);
  });

  test('says when Apple showed the default message: a rule asked for it, or none answered', () => {
    assert.equal(retentionAnswer({ kind: 'default_message', message_id: null, product_id: null, offer_id: null }), 'The product\'s default message');
    assert.equal(retentionAnswer({ kind: 'none', message_id: null, product_id: null, offer_id: null }),
      'No rule answered: the product\'s default message');
  });

  test('shows a kind it does not know as it is', () => {
    assert.equal(retentionAnswer({ kind: 'upsell', message_id: null, product_id: null, offer_id: null }), 'upsell');
  });
});

describe('named entitlements', () => {
  const none = { active: false, expires_date: null, source: null, product_id: null, original_transaction_id: null, grant_id: null,
    status: null, will_renew: null };
  const subscription = { ...none, active: true, expires_date: '2025-11-01T12:00:00.000Z', source: 'subscription',
    product_id: 'premium.monthly', original_transaction_id: '7000', status: 'active', will_renew: true };
  const granted = { ...none, active: true, expires_date: '2025-11-15T08:00:00.000Z', source: 'grant', grant_id: 'g-1' };

  test('those active now, in the answer\'s order; none', () => {
    assert.equal(activeEntitlements({ pro: subscription, remove_ads: none, extra: granted }), 'Named entitlements active now: pro, extra.');
    assert.equal(activeEntitlements({ pro: none }), 'No named entitlement is active now.');
    assert.equal(activeEntitlements({}), 'No named entitlement is active now.');
  });

  test('until when: an end, no end, the last end, never given', () => {
    assert.equal(entitlementUntil(subscription), 'until 2025-11-01 12:00 UTC');
    assert.equal(entitlementUntil({ ...granted, expires_date: null }), 'no end');
    assert.equal(entitlementUntil({ ...subscription, active: false, status: 'revoked', expires_date: '2025-09-19T12:00:00.000Z' }),
      'ended 2025-09-19 12:00 UTC');
    assert.equal(entitlementUntil(none), 'never given');
    assert.equal(entitlementUntil({ ...none, source: 'purchase' }), '—');
  });

  test('what gives it: a subscription with its status, a purchase, a pass, nothing', () => {
    assert.equal(entitlementSource(subscription), 'Subscription 7000 · premium.monthly · active');
    assert.equal(entitlementSource({ ...subscription, status: 'grace_period', will_renew: false }),
      'Subscription 7000 · premium.monthly · grace period, will not renew');
    assert.equal(entitlementSource({ ...none, source: 'purchase', product_id: 'pro.lifetime', original_transaction_id: '7100' }),
      'Purchase 7100 · pro.lifetime');
    assert.equal(entitlementSource({ ...none, source: 'pass', product_id: 'pass.30d', original_transaction_id: '7200' }), 'Pass 7200 · pass.30d');
    assert.equal(entitlementSource(none), '—');
    assert.equal(entitlementSource({ ...none, source: 'family' }), 'family');
    assert.equal(entitlementSource({ ...none, source: 'constructor' }), 'constructor');
  });

  test('a grant by when and by whom it was made, or by its id when the grants do not have it', () => {
    const grants = [{ grant_id: 'g-0', granted_at: '2025-10-01T00:00:00.000Z', granted_by: 'ops' },
      { grant_id: 'g-1', granted_at: '2025-10-15T08:02:30.000Z', granted_by: 'support' }];
    assert.equal(entitlementSource(granted, grants), 'Grant of 2025-10-15 08:02 UTC by support');
    assert.equal(entitlementSource(granted), 'Grant g-1');
    assert.equal(entitlementSource({ ...granted, grant_id: 'g-9' }, grants), 'Grant g-9');
  });
});

describe('grants', () => {
  const grant = { grant_id: 'g-1', customer_id: 'c', entitlement: 'pro', granted_at: '2025-10-15T08:00:00.000Z',
    expires_date: '2025-11-15T08:00:00.000Z', lifetime: false, reason: null, granted_by: 'support', ended_at: null, ended_by: null, active: true };

  test('active, ended by hand, or expired; in words', () => {
    assert.equal(grantState(grant), 'active');
    assert.equal(grantState({ ...grant, active: false, ended_at: '2025-10-20T00:00:00.000Z', ended_by: 'ops' }), 'ended');
    assert.equal(grantState({ ...grant, active: false }), 'expired');
    assert.deepEqual(['active', 'ended', 'expired'].map(grantStateWords), ['Active', 'Ended', 'Expired']);
    assert.equal(grantStateWords('paused'), 'paused');
    assert.equal(grantStateWords('toString'), 'toString');
  });

  test('how long: until its expiry, or for life', () => {
    assert.equal(grantLength(grant), 'Until 2025-11-15 08:00 UTC');
    assert.equal(grantLength({ ...grant, lifetime: true, expires_date: null }), 'Lifetime');
  });

  test('when and by whom; nothing done', () => {
    assert.equal(doneBy('2025-10-15T08:02:59.999Z', 'support'), '2025-10-15 08:02 UTC by support');
    assert.equal(doneBy('2025-10-15T08:02:00.000Z', null), '2025-10-15 08:02 UTC');
    assert.equal(doneBy(null, null), '—');
    assert.equal(doneBy(null, 'ops'), '—');
  });
});
