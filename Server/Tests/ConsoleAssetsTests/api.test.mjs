// api.mjs: what a request carries, and how an answer other than 2xx becomes an APIError.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { APIError, apiClient } from '../../Sources/ReceiptKitServer/Console/Assets/api.mjs';

// A fetch that records its requests and answers each with the next of the answers given.
function recordingFetch(...answers) {
  const requests = [];
  const fetch = async (path, init) => {
    requests.push({ path, init });
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return {
      ok: answer.status >= 200 && answer.status < 300,
      status: answer.status,
      statusText: answer.statusText ?? '',
      json: async () => (answer.body === undefined ? JSON.parse('not json') : answer.body),
    };
  };
  return { fetch, requests };
}

function client(fetch, token = null) {
  const refusals = [];
  const api = apiClient({ fetch, token: () => token, unauthorized: (message) => refusals.push(message) });
  return { api, refusals };
}

describe('apiClient', () => {
  test('an action names its method and sends no body; a read names none', async () => {
    const { fetch, requests } = recordingFetch({ status: 200, body: { customer_id: 'c' } }, { status: 200, body: {} });
    const { api } = client(fetch, 's3cret');
    assert.deepEqual(await api('/v1/customers/c', { method: 'DELETE' }), { customer_id: 'c' });
    await api('/v1/token', {});
    assert.equal(requests[0].init.method, 'DELETE');
    assert.equal('body' in requests[0].init, false);
    assert.equal(requests[0].init.headers.Authorization, 'Bearer s3cret');
    assert.equal('method' in requests[1].init, false);
  });

  test('an action with a body sends it as JSON, saying so', async () => {
    const { fetch, requests } = recordingFetch({ status: 201, body: { grant_id: 'g' } });
    const { api } = client(fetch, 's3cret');
    const body = { entitlement: 'pro', duration: 'P1M', reason: '<b>"x"</b>' };
    assert.deepEqual(await api('/v1/customers/c/grants', { method: 'POST', body }), { grant_id: 'g' });
    assert.equal(requests[0].init.method, 'POST');
    assert.deepEqual(JSON.parse(requests[0].init.body), body);
    assert.deepEqual(requests[0].init.headers, { Accept: 'application/json', Authorization: 'Bearer s3cret', 'Content-Type': 'application/json' });
  });

  test('a request carries the token as a bearer, asks for JSON, and sends no cookie, uses no cache, follows no redirect', async () => {
    const { fetch, requests } = recordingFetch({ status: 200, body: { as_of: 'x' } });
    const { api } = client(fetch, 's3cret');
    assert.deepEqual(await api('/v1/overview'), { as_of: 'x' });
    assert.deepEqual(requests, [{
      path: '/v1/overview',
      init: { headers: { Accept: 'application/json', Authorization: 'Bearer s3cret' }, cache: 'no-store', credentials: 'omit', redirect: 'error' },
    }]);
  });

  test('without a token there is no Authorization header at all', async () => {
    const { fetch, requests } = recordingFetch({ status: 200, body: {} }, { status: 200, body: {} });
    await client(fetch, null).api('/v1/overview');
    await client(fetch, '').api('/v1/overview');
    for (const request of requests) assert.deepEqual(request.init.headers, { Accept: 'application/json' });
  });

  test('the token is read at each request: the one typed at sign-in, then none after sign-out', async () => {
    const { fetch, requests } = recordingFetch({ status: 200, body: {} }, { status: 200, body: {} });
    let token = 'first';
    const api = apiClient({ fetch, token: () => token, unauthorized: () => {} });
    await api('/v1/search?q=-');
    token = null;
    await api('/v1/overview');
    assert.deepEqual(requests.map((request) => request.init.headers.Authorization), ['Bearer first', undefined]);
  });

  test('an error answer: its status and the API\'s code and reason', async () => {
    const { fetch } = recordingFetch({ status: 404, statusText: 'Not Found', body: { error: { code: 'not_found', message: 'no subscription 9' } } });
    const { api, refusals } = client(fetch, 't');
    const error = await api('/v1/subscriptions/9').then(() => null, (thrown) => thrown);
    assert.ok(error instanceof APIError);
    assert.deepEqual([error.status, error.code, error.message], [404, 'not_found', 'no subscription 9']);
    assert.deepEqual(refusals, []);
  });

  test('a refused token (401) asks for it again, saying why, and rejects', async () => {
    const { fetch } = recordingFetch({ status: 401, statusText: 'Unauthorized', body: { error: { code: 'unauthorized', message: 'the bearer token is wrong' } } });
    const { api, refusals } = client(fetch, 'wrong');
    await assert.rejects(api('/v1/overview'), (error) => error instanceof APIError && error.status === 401 && error.code === 'unauthorized');
    assert.deepEqual(refusals, ['The server refused the token: the bearer token is wrong']);
  });

  test('an error answer without the API\'s JSON (a proxy\'s page): http_STATUS and the status text', async () => {
    const { fetch } = recordingFetch({ status: 502, statusText: 'Bad Gateway' }, { status: 500, statusText: 'Internal Server Error', body: { detail: 'x' } });
    const { api } = client(fetch);
    await assert.rejects(api('/v1/overview'), { status: 502, code: 'http_502', message: 'Bad Gateway' });
    await assert.rejects(api('/v1/overview'), { status: 500, code: 'http_500', message: 'Internal Server Error' });
  });

  test('a 2xx answer that is not JSON reads as null', async () => {
    const { fetch } = recordingFetch({ status: 204 });
    assert.equal(await client(fetch).api('/v1/overview'), null);
  });

  test('no answer at all (the server is down) rejects with fetch\'s own error, not an APIError', async () => {
    const down = new TypeError('Failed to fetch');
    const { fetch } = recordingFetch(down);
    const { api, refusals } = client(fetch, 't');
    await assert.rejects(api('/v1/overview'), (error) => error === down && error.status === undefined);
    assert.deepEqual(refusals, []);
  });
});
