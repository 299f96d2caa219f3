// access.mjs: which scope allows which action, and the token's scope asked once per token.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allows, createAccess, runAction, SCOPES } from '../../Sources/ReceiptKitServer/Console/Assets/access.mjs';

describe('allows', () => {
  test('each scope allows what it and the scopes before it allow, nothing after', () => {
    const table = SCOPES.map((scope) => SCOPES.map((needed) => allows(scope, needed)));
    assert.deepEqual(table, [
      [true, false, false],
      [true, true, false],
      [true, true, true],
    ]);
  });

  test('a scope that is not one allows nothing, and nothing needs one', () => {
    for (const scope of ['', 'owner', undefined, null, 'ADMIN']) {
      for (const needed of SCOPES) assert.equal(allows(scope, needed), false, `${scope} ${needed}`);
    }
    assert.equal(allows('admin', 'owner'), false);
  });
});

describe('createAccess', () => {
  // An api that answers GET /v1/token from `answers`, in order, and records each ask.
  function tokenApi(...answers) {
    const asked = [];
    const api = async (path) => {
      asked.push(path);
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    };
    return { api, asked };
  }

  test('the scope is asked once per token, and again once the token changed', async () => {
    const { api, asked } = tokenApi({ name: 'support', scope: 'read' }, { name: 'ops', scope: 'admin' });
    let token = 'a';
    const access = createAccess({ api, token: () => token });
    assert.equal(await access.scope(), 'read');
    assert.equal(await access.scope(), 'read');
    assert.deepEqual(asked, ['/v1/token']);
    token = 'b';
    assert.equal(await access.scope(), 'admin');
    assert.deepEqual(asked, ['/v1/token', '/v1/token']);
  });

  test('a failed ask is not kept: the next one asks again', async () => {
    const { api, asked } = tokenApi(new Error('offline'), { name: null, scope: 'admin' });
    const access = createAccess({ api, token: () => null });
    await assert.rejects(access.scope(), /offline/);
    assert.equal(await access.scope(), 'admin');
    assert.equal(asked.length, 2);
  });
});

describe('runAction', () => {
  const parts = () => ({ button: { disabled: false }, status: { className: '', textContent: '' } });

  test('the control is disabled while the request runs, and the line says so; then the sentence answered', async () => {
    const { button, status } = parts();
    let during = null;
    await runAction(button, status, 'Grant', async () => {
      during = [button.disabled, status.className, status.textContent];
      return 'Granted.';
    });
    assert.deepEqual(during, [true, 'action-status muted', 'Grant…']);
    assert.deepEqual([button.disabled, status.className, status.textContent], [false, 'action-status muted', 'Granted.']);
  });

  test('null (the view is drawn again) writes nothing more', async () => {
    const { button, status } = parts();
    await runAction(button, status, 'End grant', async () => null);
    assert.deepEqual([button.disabled, status.textContent], [false, 'End grant…']);
  });

  test('a refusal is written with the API\'s reason, as an error, and does not reject', async () => {
    const { button, status } = parts();
    await runAction(button, status, 'Grant', async () => { throw new Error('duration: "1 month" is not ISO 8601'); });
    assert.deepEqual([button.disabled, status.className, status.textContent],
      [false, 'action-status error', 'Grant failed: duration: "1 month" is not ISO 8601']);
  });
});
