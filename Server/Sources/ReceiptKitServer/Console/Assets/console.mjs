// The console's entry, console.html's one script (type="module"): plain JavaScript modules, no
// framework, no build step. It reads /v1/* with the operator's token (session.mjs, api.mjs) and
// draws the view the address names (router.mjs): the overview, a search, a customer, a
// subscription, with the actions the token's scope allows (access.mjs). Every element is built
// by dom.mjs, every value going in as text.

import { createAccess } from './access.mjs';
import { apiClient } from './api.mjs';
import { renderCustomer, renderSubscription } from './customer.mjs';
import { renderFind } from './find.mjs';
import { renderOverview } from './overview.mjs';
import { createRouter } from './router.mjs';
import { createSession, signInPanel } from './session.mjs';

const session = createSession({ tokenRequired: document.documentElement.dataset.auth === 'token', storage: sessionStorage });
const api = apiClient({
  fetch: (path, init) => fetch(path, init),
  token: session.token,
  unauthorized: (message) => panel.showSignIn(message),
});
const access = createAccess({ api, token: session.token });
const router = createRouter({
  views: { overview: renderOverview, find: renderFind, customer: renderCustomer, subscription: renderSubscription },
  canRead: session.canRead,
  context: { api, access },
});
const panel = signInPanel({ session, api, route: router.route });

document.getElementById('search').addEventListener('submit', (event) => {
  event.preventDefault();
  const query = document.getElementById('query').value.trim();
  if (query) location.hash = '#/find/' + encodeURIComponent(query);
});

if (session.canRead()) panel.showApp(); else panel.showSignIn('');
