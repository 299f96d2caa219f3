// The API client: requests to this server's /v1/* routes (GET, and the actions' POST and
// DELETE, a grant's with a JSON body), with the operator's token as `Authorization: Bearer …` and
// nothing else (no cookie, no cache, no redirect followed).
// Tested by Server/Tests/ConsoleAssetsTests/api.test.mjs with a fetch of its own.

/** An answer other than 2xx: its HTTP status and the API's error code and reason. */
export class APIError extends Error {
  /**
   * @param {number} status
   * @param {string} code The API's stable snake_case code, or `http_STATUS` when it gave none.
   * @param {string} message The API's reason, or the status text.
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * A function that calls one route of the API.
 * @param {object} options
 * @param {(path: string, init: RequestInit) => Promise<Response>} options.fetch The browser's fetch.
 * @param {() => string | null} options.token The token to send now, if any.
 * @param {(message: string) => void} options.unauthorized Told when the server refuses the token
 *   (401), with a sentence that says so.
 * @returns {(path: string, options?: {method?: string, body?: object}) => Promise<any>} Given a
 *   path (`/v1/overview`) and, for an action, a method other than GET (`{method: 'POST'}`) and
 *   the object to send as its JSON body, if any, the answer's JSON. Rejects with an
 *   {@link APIError} for an answer other than 2xx, and with fetch's error when no answer came.
 */
export function apiClient({ fetch, token, unauthorized }) {
  return async function api(path, { method = 'GET', body: sent } = {}) {
    const headers = { Accept: 'application/json' };
    const bearer = token();
    if (bearer) headers.Authorization = 'Bearer ' + bearer;
    const init = { headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (method !== 'GET') init.method = method;
    if (sent !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(sent);
    }
    const response = await fetch(path, init);
    let body = null;
    try { body = await response.json(); } catch (_) { body = null; }
    if (!response.ok) {
      const error = body && body.error ? body.error : { code: 'http_' + response.status, message: response.statusText };
      if (response.status === 401) unauthorized('The server refused the token: ' + error.message);
      throw new APIError(response.status, error.code, error.message);
    }
    return body;
  };
}
