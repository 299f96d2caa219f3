// The operator's session: the API token, kept in this tab's sessionStorage until the tab closes
// or the operator signs out, and the sign-in panel of console.html that asks for it. The page's
// data-auth says whether the server needs a token at all ("none": a server on loopback without
// RECEIPTKIT_API_TOKEN).

const TOKEN_KEY = 'receiptkit.console.token';

/**
 * The session of this tab.
 * @param {object} options
 * @param {boolean} options.tokenRequired Whether the API needs a token.
 * @param {Storage} options.storage Where the token is kept: `sessionStorage`.
 * @returns {{tokenRequired: boolean, token: () => string | null, canRead: () => boolean,
 *   use: (token: string) => void, keep: () => void, forget: () => void}}
 */
export function createSession({ tokenRequired, storage }) {
  let token = storage.getItem(TOKEN_KEY);
  return {
    tokenRequired,
    /** The token requests carry now, if any. */
    token: () => token,
    /** Whether the API can be read: with a token, or on a server that needs none. */
    canRead: () => Boolean(token) || !tokenRequired,
    /** Sends a token the operator typed from now on, not kept until the server takes it. */
    use: (typed) => { token = typed; },
    /** Keeps the token in use for this tab. */
    keep: () => { storage.setItem(TOKEN_KEY, token); },
    /** Forgets the token, here and in the tab's storage. */
    forget: () => { token = null; storage.removeItem(TOKEN_KEY); },
  };
}

/**
 * Wires the page's sign-in panel and sign-out button.
 * @param {object} options
 * @param {ReturnType<typeof createSession>} options.session
 * @param {(path: string) => Promise<any>} options.api
 * @param {() => void} options.route Draws the view the address names.
 * @returns {{showSignIn: (message: string) => void, showApp: () => void}}
 */
export function signInPanel({ session, api, route }) {
  const byId = (id) => document.getElementById(id);

  function showSignIn(message) {
    session.forget();
    byId('signin').hidden = false;
    byId('search').hidden = true;
    byId('signout').hidden = true;
    byId('signin-error').textContent = message || '';
    byId('view').replaceChildren();
    byId('token').focus();
  }

  function showApp() {
    byId('signin').hidden = true;
    byId('search').hidden = false;
    byId('signout').hidden = !session.tokenRequired;
    route();
  }

  byId('signin-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const input = byId('token');
    session.use(input.value.trim());
    input.value = '';
    try {
      // Any route behind the bearer check tells whether the token is taken.
      await api('/v1/search?q=' + encodeURIComponent('-'));
      session.keep();
      showApp();
    } catch (error) {
      if (error.status !== 401) showSignIn('The server could not be reached: ' + error.message);
    }
  });
  byId('signout').addEventListener('click', () => { location.hash = '#/'; showSignIn(''); });
  return { showSignIn, showApp };
}
