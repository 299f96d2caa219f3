// router.mjs: which view an address names.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRoute } from '../../Sources/ReceiptKitServer/Console/Assets/router.mjs';

test('the overview: no address, #, #/', () => {
  for (const hash of ['', '#', '#/']) assert.deepEqual(parseRoute(hash), { name: '', value: '' }, hash);
});

test('a view and its argument, percent-decoded', () => {
  assert.deepEqual(parseRoute('#/customer/c-1'), { name: 'customer', value: 'c-1' });
  assert.deepEqual(parseRoute('#/subscription/2000000123456789'), { name: 'subscription', value: '2000000123456789' });
  assert.deepEqual(parseRoute('#/find/' + encodeURIComponent('a/b <c> "d" é')), { name: 'find', value: 'a/b <c> "d" é' });
  assert.deepEqual(parseRoute('#customer/x'), { name: 'customer', value: 'x' });
});

test('an argument that is not percent-encoded text is taken as it is, not thrown on', () => {
  assert.deepEqual(parseRoute('#/customer/100%'), { name: 'customer', value: '100%' });
  assert.deepEqual(parseRoute('#/find/%E0%A4%A'), { name: 'find', value: '%E0%A4%A' });
});

test('only the first part after the view is its argument', () => {
  assert.deepEqual(parseRoute('#/customer/a/b'), { name: 'customer', value: 'a' });
});
