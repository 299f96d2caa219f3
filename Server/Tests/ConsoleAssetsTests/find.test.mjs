// find.mjs: where the search's matches lead.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appAndEnvironment, searchLinks } from '../../Sources/ReceiptKitServer/Console/Assets/find.mjs';

const key = (id, environment = 'Production') => ({ bundle_id: 'com.example.app', environment, original_transaction_id: id });

test('nothing found: no link', () => {
  assert.deepEqual(searchLinks([]), []);
});

test('a customer, a subscription and a renewal\'s transaction: one link per customer and per subscription', () => {
  const links = searchLinks([
    { type: 'customer', customer_id: 'c/1?', subscriptions: [key('7000'), key('8000')] },
    { type: 'subscription', subscriptions: [key('7000')] },
    { type: 'transaction', transaction_id: '7002', subscriptions: [key('7000'), key('9000')] },
  ]);
  assert.deepEqual(links, [
    { href: '#/customer/c%2F1%3F', text: 'Customer (customer id or appAccountToken) ', id: 'c/1?' },
    { href: '#/subscription/7000', text: 'Subscription, original transaction id ', id: '7000', where: 'com.example.app · Production' },
    { href: '#/subscription/7000', text: 'Subscription with transaction 7002: original transaction id ', id: '7000', where: 'com.example.app · Production' },
    { href: '#/subscription/9000', text: 'Subscription with transaction 7002: original transaction id ', id: '9000', where: 'com.example.app · Production' },
  ]);
});

test('an id carrying markup stays in the address percent-encoded', () => {
  const [link] = searchLinks([{ type: 'customer', customer_id: '<img src=x onerror=alert(1)>', subscriptions: [] }]);
  assert.equal(link.href, '#/customer/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E');
  assert.equal(link.id, '<img src=x onerror=alert(1)>');
});

test('one original transaction id in Production and in Sandbox: a link each, saying where', () => {
  const links = searchLinks([{ type: 'subscription', subscriptions: [key('7000'), key('7000', 'Sandbox')] }]);
  assert.deepEqual(links.map((link) => link.where), ['com.example.app · Production', 'com.example.app · Sandbox']);
  assert.equal(appAndEnvironment({ bundle_id: 'com.example.mac', environment: 'Sandbox' }), 'com.example.mac · Sandbox');
});
