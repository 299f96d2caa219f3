// entitlements.mjs: the grant form's body, its expiry read in UTC, the grants' order.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inEachTimeZone, ZONES } from './support.mjs';
import {
  expiryInstant, GRANT_DURATIONS, GRANT_LENGTHS, grantBody, latestFirst,
} from '../../Sources/ReceiptKitServer/Console/Assets/entitlements.mjs';

describe('expiryInstant', () => {
  test('a date and time without a zone, as a datetime-local input gives it, is in UTC', () => {
    assert.equal(expiryInstant('2025-12-01T09:30'), '2025-12-01T09:30:00Z');
    assert.equal(expiryInstant('2025-12-01T09:30:15'), '2025-12-01T09:30:15Z');
    assert.equal(expiryInstant('2025-12-01T09:30:15.250'), '2025-12-01T09:30:15.250Z');
    assert.equal(expiryInstant(' 2025-12-01 09:30 '), '2025-12-01T09:30:00Z');
  });

  test('is the same in every time zone the operator may be in', () => {
    inEachTimeZone(ZONES, (zone) => assert.equal(expiryInstant('2024-02-29T23:30'), '2024-02-29T23:30:00Z', zone));
  });

  test('anything else is sent as it is, for the server to name what is wrong with it', () => {
    assert.equal(expiryInstant(''), '');
    assert.equal(expiryInstant('2025-12-01T09:30:00Z'), '2025-12-01T09:30:00Z');
    assert.equal(expiryInstant('2025-12-01T09:30+02:00'), '2025-12-01T09:30+02:00');
    assert.equal(expiryInstant('2025-12-01'), '2025-12-01');
    assert.equal(expiryInstant('next week'), 'next week');
  });
});

describe('grantBody', () => {
  const fields = { entitlement: 'pro', length: 'duration', duration: 'P1M', expires: '2025-12-01T09:30', reason: '' };

  test('one of duration, expires_date and lifetime, as chosen; the other fields left out', () => {
    assert.deepEqual(grantBody(fields), { entitlement: 'pro', duration: 'P1M' });
    assert.deepEqual(grantBody({ ...fields, length: 'expires_date' }), { entitlement: 'pro', expires_date: '2025-12-01T09:30:00Z' });
    assert.deepEqual(grantBody({ ...fields, length: 'lifetime' }), { entitlement: 'pro', lifetime: true });
  });

  test('a duration trimmed and in capitals, as ISO 8601 writes it; one typed wrong is sent as typed, for the server to refuse', () => {
    assert.deepEqual(grantBody({ ...fields, duration: ' p7d ' }), { entitlement: 'pro', duration: 'P7D' });
    assert.deepEqual(grantBody({ ...fields, duration: 'pt12h' }), { entitlement: 'pro', duration: 'PT12H' });
    assert.deepEqual(grantBody({ ...fields, duration: '' }), { entitlement: 'pro', duration: '' });
    assert.deepEqual(grantBody({ ...fields, duration: '1 month' }), { entitlement: 'pro', duration: '1 month' });
    assert.deepEqual(grantBody({ ...fields, duration: 'period' }), { entitlement: 'pro', duration: 'period' });
  });

  test('a reason trimmed, kept as it is typed, markup included; none when only spaces', () => {
    const hostile = '<img src=x onerror="alert(1)"> refund "dispute"';
    assert.deepEqual(grantBody({ ...fields, reason: '  ' + hostile + '\n' }), { entitlement: 'pro', duration: 'P1M', reason: hostile });
    assert.equal('reason' in grantBody({ ...fields, reason: ' \t ' }), false);
  });

  test('a length that is not one of the three is refused, not sent as some other', () => {
    assert.deepEqual(GRANT_LENGTHS, ['duration', 'expires_date', 'lifetime']);
    for (const length of [undefined, '', 'forever', 'constructor']) {
      assert.throws(() => grantBody({ ...fields, length }), RangeError, String(length));
    }
  });

  test('the durations suggested are ISO 8601', () => {
    for (const [value] of GRANT_DURATIONS) assert.match(value, /^P\d+[DWMY]$/);
  });
});

describe('latestFirst', () => {
  const grant = (id, at) => ({ grant_id: id, granted_at: at });

  test('no grant: none', () => {
    assert.deepEqual(latestFirst([]), []);
  });

  test('latest first; grants of one instant in the reverse of the API\'s order; the API\'s list untouched', () => {
    const grants = [grant('a', '2025-10-01T00:00:00.000Z'), grant('b', '2025-10-15T08:00:00.000Z'), grant('c', '2025-10-15T08:00:00.000Z'),
      grant('d', '2025-10-10T00:00:00.000Z')];
    assert.deepEqual(latestFirst(grants).map((item) => item.grant_id), ['c', 'b', 'd', 'a']);
    assert.deepEqual(grants.map((item) => item.grant_id), ['a', 'b', 'c', 'd']);
  });

  test('an instant given with an offset is compared as the instant it is', () => {
    const grants = [grant('a', '2025-10-15T09:00:00+02:00'), grant('b', '2025-10-15T08:00:00.000Z')];
    assert.deepEqual(latestFirst(grants).map((item) => item.grant_id), ['b', 'a']);
  });
});
