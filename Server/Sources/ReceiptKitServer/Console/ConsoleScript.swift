/// The console's script: plain JavaScript, no framework, no build step. It reads `/v1/*` with
/// the operator's token and builds every element with `createElement`/`createElementNS`, every
/// value going in as text (never as markup), so a customer id or a product id cannot become
/// code. The token lives in `sessionStorage` (this tab, until it closes) and goes out only in
/// the `Authorization` header of requests to this origin.
enum ConsoleScript {
    static let text = #"""
        'use strict';
        (() => {
          const TOKEN_KEY = 'receiptkit.console.token';
          const STATUSES = ['active', 'grace_period', 'billing_retry', 'expired', 'revoked'];
          const WORDS = { active: 'Active', grace_period: 'Grace period', billing_retry: 'Billing retry', expired: 'Expired', revoked: 'Revoked' };
          const MARKS = { revocation: 'Refund or revocation', product_change: 'Product change', auto_renew_off: 'Auto-renew turned off',
            auto_renew_on: 'Auto-renew turned on', renewal_product_change: 'Renews as another product' };
          const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
          const SVG_NS = 'http://www.w3.org/2000/svg';
          const tokenRequired = document.documentElement.dataset.auth === 'token';
          let token = sessionStorage.getItem(TOKEN_KEY);
          let generation = 0;
          let redraws = [];

          // Elements: attributes from constants of this script, values only as text.
          function build(node, props, children) {
            for (const [name, value] of Object.entries(props || {})) {
              if (value === null || value === undefined || value === false) continue;
              if (name === 'on') {
                for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
              } else if (/^on/i.test(name)) {
                throw new Error('no event handler attributes');
              } else {
                node.setAttribute(name, value === true ? '' : String(value));
              }
            }
            for (const child of children.flat(Infinity)) {
              if (child === null || child === undefined || child === false) continue;
              node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
            }
            return node;
          }
          const el = (tag, props, ...children) => build(document.createElement(tag), props, children);
          const svg = (tag, props, ...children) => build(document.createElementNS(SVG_NS, tag), props, children);
          const view = () => document.getElementById('view');
          const when = (iso) => (iso ? iso.slice(0, 16).replace('T', ' ') + ' UTC' : '—');
          const day = (iso) => (iso ? iso.slice(0, 10) : '—');
          const ms = (iso) => Date.parse(iso);
          const enc = encodeURIComponent;

          class APIError extends Error {
            constructor(status, code, message) { super(message); this.status = status; this.code = code; }
          }

          async function api(path) {
            const headers = { Accept: 'application/json' };
            if (token) headers.Authorization = 'Bearer ' + token;
            const response = await fetch(path, { headers, cache: 'no-store', credentials: 'omit', redirect: 'error' });
            let body = null;
            try { body = await response.json(); } catch (_) { body = null; }
            if (!response.ok) {
              const error = body && body.error ? body.error : { code: 'http_' + response.status, message: response.statusText };
              if (response.status === 401) showSignIn('The server refused the token: ' + error.message);
              throw new APIError(response.status, error.code, error.message);
            }
            return body;
          }

          // Signing in and out.
          function showSignIn(message) {
            token = null;
            sessionStorage.removeItem(TOKEN_KEY);
            document.getElementById('signin').hidden = false;
            document.getElementById('search').hidden = true;
            document.getElementById('signout').hidden = true;
            document.getElementById('signin-error').textContent = message || '';
            view().replaceChildren();
            document.getElementById('token').focus();
          }

          function showApp() {
            document.getElementById('signin').hidden = true;
            document.getElementById('search').hidden = false;
            document.getElementById('signout').hidden = !tokenRequired;
            route();
          }

          document.getElementById('signin-form').addEventListener('submit', async (event) => {
            event.preventDefault();
            const input = document.getElementById('token');
            token = input.value.trim();
            input.value = '';
            try {
              await api('/v1/search?q=' + enc('-'));
              sessionStorage.setItem(TOKEN_KEY, token);
              showApp();
            } catch (error) {
              if (error.status !== 401) showSignIn('The server could not be reached: ' + error.message);
            }
          });
          document.getElementById('signout').addEventListener('click', () => { location.hash = '#/'; showSignIn(''); });
          document.getElementById('search').addEventListener('submit', (event) => {
            event.preventDefault();
            const query = document.getElementById('query').value.trim();
            if (query) location.hash = '#/find/' + enc(query);
          });

          // Views, one per address: #/, #/find/TEXT, #/customer/ID, #/subscription/ID.
          function route() {
            if (!token && tokenRequired) return;
            const [name, argument] = location.hash.replace(/^#\/?/, '').split('/');
            const value = argument === undefined ? '' : decodeURIComponent(argument);
            const mine = ++generation;
            redraws = [];
            const page = el('div', { class: 'loading muted' }, 'Loading…');
            view().replaceChildren(page);
            const render = { find: renderFind, customer: renderCustomer, subscription: renderSubscription }[name] || renderOverview;
            render(value).then((content) => {
              if (mine === generation) view().replaceChildren(content);
            }, (error) => {
              if (mine === generation && error.status !== 401) view().replaceChildren(el('p', { class: 'error' }, 'Failed: ' + error.message));
            });
          }
          window.addEventListener('hashchange', route);
          let resizeTimer = null;
          window.addEventListener('resize', () => {
            clearTimeout(resizeTimer);
            resizeTimer = setTimeout(() => redraws.forEach((redraw) => redraw()), 150);
          });

          // The overview.
          async function renderOverview() {
            const data = await api('/v1/overview');
            const subscriptions = data.subscriptions;
            const counts = el('div', { class: 'counts' }, subscriptions.by_status.map((item) =>
              el('div', { class: 'count ' + item.status, 'data-status': item.status }, el('strong', {}, item.count), WORDS[item.status])));
            const products = el('div', { class: 'scroll' }, el('table', {},
              el('thead', {}, el('tr', {}, el('th', {}, 'Product'), el('th', {}, 'Total'), STATUSES.map((status) => el('th', {}, WORDS[status])))),
              el('tbody', {}, subscriptions.by_product.map((product) => el('tr', {},
                el('td', { class: 'mono' }, product.product_id || '—'), el('td', {}, product.total),
                product.by_status.map((item) => el('td', {}, item.count)))))));
            const notifications = data.notifications;
            const chart = el('div', { class: 'chart' });
            const legend = el('ul', { class: 'legend' });
            const draw = () => drawNotificationChart(chart, legend, notifications.days);
            redraws.push(draw);
            requestAnimationFrame(draw);
            const recent = el('div', { class: 'scroll' }, el('table', { class: 'recent' },
              el('thead', {}, el('tr', {}, el('th', {}, 'Received'), el('th', {}, 'Result'), el('th', {}, 'Type'), el('th', {}, 'Subscription'))),
              el('tbody', {}, notifications.recent.map((item) => el('tr', {},
                el('td', {}, when(item.received_at)),
                el('td', {}, el('span', { class: 'badge ' + (item.result === 'verified' ? 'verified' : 'rejected') }, item.result),
                  item.message ? el('div', { class: 'muted' }, item.message) : null),
                el('td', {}, [item.type, item.subtype].filter(Boolean).join(' · ') || '—'),
                el('td', {}, item.original_transaction_id
                  ? el('a', { href: '#/subscription/' + enc(item.original_transaction_id) }, item.original_transaction_id) : '—'))))));
            const rejected = notifications.rejected;
            const reconciliation = data.reconciliation;
            return el('div', {},
              el('h1', {}, 'Overview'), el('p', { class: 'muted' }, 'As of ' + when(data.as_of)),
              el('section', { class: 'card' }, el('h2', {}, 'Subscriptions by status'), counts,
                subscriptions.complete ? null : el('p', { class: 'muted' },
                  'Counted the first ' + subscriptions.counted + ' of ' + subscriptions.total + ' subscriptions.'),
                el('h3', {}, 'By product'), products),
              el('section', { class: 'card' }, el('h2', {}, 'Notifications received per day, last 30 days'), chart, legend,
                notifications.complete ? null : el('p', { class: 'muted' }, 'Counted from ' + when(notifications.counted_from) + ' only.')),
              el('div', { class: 'grid' },
                el('section', { class: 'card' }, el('h2', {}, 'Last notifications'), recent,
                  el('p', { class: 'muted' }, 'Refused notifications are never stored: this server process refused ' + rejected.total +
                    ' since ' + when(rejected.since) + (rejected.by_code.length ? ' (' + rejected.by_code.map((item) => item.code + ': ' + item.count).join(', ') + ').' : '.'))),
                el('section', { class: 'card' }, el('h2', {}, 'Reconciliation with Apple'),
                  reconciliation.enabled
                    ? el('p', { class: 'reconcile' }, reconciliation.cursor
                      ? 'Notification history read up to ' + when(reconciliation.cursor) + ': ' + duration(reconciliation.lag_seconds) + ' behind.'
                      : 'On; no window read yet.')
                    : el('p', { class: 'reconcile muted' }, 'Off: no In-App Purchase key is configured.')),
                el('section', { class: 'card' }, el('h2', {}, 'Deliveries'), deliveryBacklog(data.deliveries))));
          }

          function deliveryBacklog(deliveries) {
            const rows = deliveries.destinations.map((item) => el('tr', {},
              el('td', {}, item.kind), el('td', { class: 'target' }, item.target),
              el('td', {}, String(item.pending)), el('td', {}, duration(item.oldest_pending_seconds))));
            return el('div', { class: 'deliveries' },
              rows.length
                ? el('div', { class: 'scroll' }, el('table', { class: 'backlog' },
                    el('thead', {}, el('tr', {}, el('th', {}, 'Kind'), el('th', {}, 'Destination'), el('th', {}, 'Waiting'), el('th', {}, 'Oldest'))),
                    el('tbody', {}, rows)))
                : el('p', { class: 'muted' }, 'Nothing waiting to be sent.'),
              el('p', { class: deliveries.failed ? 'failed' : 'muted' },
                (deliveries.failed_complete ? String(deliveries.failed) : 'At least ' + deliveries.failed) +
                ' ran out of time (GET /v1/webhooks/deliveries?state=failed lists them; POST …/{id}/retry sends one again).'));
          }

          function duration(seconds) {
            if (seconds < 120) return seconds + ' s';
            if (seconds < 7200) return Math.round(seconds / 60) + ' min';
            if (seconds < 172800) return Math.round(seconds / 3600) + ' h';
            return Math.round(seconds / 86400) + ' days';
          }

          function drawNotificationChart(chart, legend, days) {
            const width = Math.max(280, chart.clientWidth || 600);
            const height = 170;
            const top = 12;
            const bottom = 22;
            const totals = new Map();
            for (const item of days) for (const pair of item.by_type) totals.set(pair.type, (totals.get(pair.type) || 0) + pair.count);
            const types = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || (a < b ? -1 : 1));
            const colour = (type) => 't' + Math.min(types.indexOf(type), 7);
            const maximum = Math.max(1, ...days.map((item) => item.total));
            const step = width / days.length;
            const scale = (height - top - bottom) / maximum;
            const picture = svg('svg', { class: 'notifications', viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img',
              'aria-label': 'Notifications received per day by type' });
            picture.appendChild(svg('text', { x: 2, y: 10 }, maximum + ' per day'));
            days.forEach((item, index) => {
              let y = height - bottom;
              const bar = svg('g', { class: 'bar', 'data-day': item.day, 'data-total': item.total });
              for (const pair of [...item.by_type].sort((a, b) => types.indexOf(a.type) - types.indexOf(b.type))) {
                const h = pair.count * scale;
                y -= h;
                bar.appendChild(svg('rect', { class: colour(pair.type), x: index * step + 1, y, width: Math.max(1, step - 2), height: h,
                  'data-type': pair.type, 'data-count': pair.count }, svg('title', {}, item.day + ' ' + pair.type + ': ' + pair.count)));
              }
              picture.appendChild(bar);
              if (index % 7 === 0 || index === days.length - 1) {
                picture.appendChild(svg('text', { x: index * step + 1, y: height - 6 }, item.day.slice(5)));
              }
            });
            picture.appendChild(svg('line', { class: 'axis', x1: 0, x2: width, y1: height - bottom + 0.5, y2: height - bottom + 0.5 }));
            chart.replaceChildren(picture);
            legend.replaceChildren(...(types.length ? types : ['(none yet)']).map((type) => el('li', {},
              el('span', { class: 'swatch ' + (types.length ? colour(type) : '') }), type + (totals.has(type) ? ' ' + totals.get(type) : ''))));
          }

          // Finding.
          async function renderFind(query) {
            document.getElementById('query').value = query;
            const data = await api('/v1/search?q=' + enc(query));
            const matches = data.matches;
            const links = [];
            for (const match of matches) {
              if (match.type === 'customer') {
                links.push({ href: '#/customer/' + enc(match.customer_id), text: 'Customer (customer id or appAccountToken) ', id: match.customer_id });
              } else {
                for (const key of match.subscriptions) {
                  const label = match.type === 'transaction' ? 'Subscription with transaction ' + match.transaction_id + ': original transaction id ' : 'Subscription, original transaction id ';
                  links.push({ href: '#/subscription/' + enc(key.original_transaction_id), text: label, id: key.original_transaction_id });
                }
              }
            }
            if (links.length === 1) {
              history.replaceState(null, '', links[0].href);
              route();
              return el('p', { class: 'muted' }, 'Opening…');
            }
            return el('section', { class: 'card' }, el('h1', {}, 'Find'),
              links.length ? el('ul', { class: 'results' }, links.map((link) => el('li', {}, link.text, el('a', { href: link.href }, link.id))))
                : el('p', { class: 'none' }, 'Nothing stored matches ', el('code', {}, query),
                  ' as a customer id, an appAccountToken, an original transaction id or a transaction id.'));
          }

          // A customer, and a subscription.
          async function renderCustomer(customerId) {
            const data = await api('/v1/customers/' + enc(customerId) + '/entitlements');
            const entitling = data.subscriptions.filter((state) => state.entitled);
            const since = { revoked: 'revocation_date', expired: 'expires_date', billing_retry: 'expires_date' };
            const words = (state) => (state.product_id || state.original_transaction_id) + ': ' + WORDS[state.status].toLowerCase() +
              (state.status === 'grace_period' ? ' until ' + when(state.grace_period_expires_date)
                : state.status === 'active' ? (state.expires_date ? ' until ' + when(state.expires_date) : '') + (state.will_renew === false ? ', will not renew' : '')
                  : state[since[state.status]] ? ' since ' + when(state[since[state.status]]) : '');
            const reason = data.subscriptions.length ? (entitling.length ? entitling : data.subscriptions).map(words).join('; ')
              : 'Nothing is linked to this customer id.';
            return el('div', {},
              el('h1', {}, 'Customer ', el('code', { class: 'customer-id' }, customerId)),
              el('div', { class: 'entitlement ' + (data.entitled ? 'entitled' : 'not-entitled') },
                el('strong', {}, data.entitled ? 'Entitled now' : 'Not entitled now'), reason),
              data.subscriptions.map((state) => subscriptionCard(state)));
          }

          async function renderSubscription(originalTransactionId) {
            let state = null;
            try {
              state = await api('/v1/subscriptions/' + enc(originalTransactionId));
            } catch (error) {
              if (error.status !== 404) throw error;
            }
            return el('div', {}, el('h1', {}, 'Subscription ', el('code', {}, originalTransactionId)),
              state ? subscriptionCard(state) : el('p', { class: 'muted' }, 'Nothing of it is known now.'));
          }

          function subscriptionCard(state) {
            const fields = ['status', 'entitled', 'product_id', 'expires_date', 'grace_period_expires_date', 'will_renew', 'auto_renew_product_id',
              'expiration_intent', 'is_trial', 'revocation_date', 'revocation_reason', 'latest_transaction_id', 'app_account_token',
              'ownership_type', 'last_signed_date', 'as_of'];
            const timeline = el('div', { class: 'timeline-box' }, el('p', { class: 'muted' }, 'Loading the timeline…'));
            const asOf = el('div', { class: 'panel asof-panel' });
            const record = el('div', { class: 'panel record-panel' });
            const card = el('section', { class: 'card subscription', 'data-original-transaction-id': state.original_transaction_id },
              el('h2', {}, el('span', { class: 'mono' }, state.product_id || '—'), ' ', el('span', { class: 'badge ' + state.status }, WORDS[state.status])),
              el('p', { class: 'muted' }, 'Original transaction id ', el('code', {}, state.original_transaction_id), ' · ', state.environment, ' · ', state.bundle_id,
                state.app_account_token ? [' · appAccountToken ', el('a', { href: '#/customer/' + enc(state.app_account_token) }, state.app_account_token)] : null),
              timeline, asOf, record, el('h3', {}, 'State now'), stateList(state, fields));
            api('/v1/subscriptions/' + enc(state.original_transaction_id) + '/timeline').then((data) => {
              const mine = data.subscriptions.find((item) => item.bundle_id === state.bundle_id && item.environment === state.environment) || data.subscriptions[0];
              const draw = () => drawTimeline(timeline, mine, data.now, state.original_transaction_id, asOf, record);
              redraws.push(draw);
              draw();
            }, (error) => { timeline.replaceChildren(el('p', { class: 'error' }, 'The timeline failed: ' + error.message)); });
            return card;
          }

          function stateList(state, fields) {
            return el('dl', { class: 'state' }, fields.filter((name) => name in state).map((name) => {
              const value = state[name];
              const text = value === null ? '—' : typeof value === 'string' && /_date$|^as_of$/.test(name) ? when(value) : String(value);
              return [el('dt', {}, name), el('dd', { 'data-field': name }, text)];
            }));
          }

          // The timeline: periods as bars, the status under them, grace and retry shaded, marks, the axis.
          function drawTimeline(box, timeline, now, originalTransactionId, asOfPanel, recordPanel) {
            const width = Math.max(280, box.clientWidth || 600);
            const height = 150;
            const instants = [ms(now)];
            for (const period of timeline.periods) instants.push(ms(period.start), ms(period.end));
            for (const span of timeline.spans) instants.push(ms(span.from));
            for (const mark of timeline.marks) instants.push(ms(mark.at));
            const known = instants.filter((value) => Number.isFinite(value));
            const low = Math.min(...known);
            const high = Math.max(...known);
            const pad = Math.max((high - low) * 0.03, 86400000);
            const t0 = low - pad;
            const t1 = high + pad;
            const x = (time) => 6 + ((time - t0) / (t1 - t0)) * (width - 12);
            const timeAt = (px) => t0 + ((px - 6) / (width - 12)) * (t1 - t0);
            const end = (iso) => (iso ? ms(iso) : t1);
            const records = new Map(timeline.records.map((item) => [item.id, item]));
            const picture = svg('svg', { class: 'timeline', viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img',
              'aria-label': 'Timeline of subscription ' + originalTransactionId });
            const spanLabel = (span) => WORDS[span.status] + ' ' + when(span.from) + ' – ' + (span.to ? when(span.to) : 'now and on');
            const openSpan = (span) => ({ click: () => showRecords(recordPanel, span.records, records, spanLabel(span)) });
            for (const span of timeline.spans.filter((item) => item.status === 'grace_period' || item.status === 'billing_retry')) {
              picture.appendChild(svg('rect', { class: 'shade ' + span.status, x: x(ms(span.from)), y: 8, width: Math.max(1, x(end(span.to)) - x(ms(span.from))),
                height: 96, 'data-kind': 'shade', 'data-status': span.status, 'data-from': span.from, 'data-to': span.to || '', on: openSpan(span) },
                svg('title', {}, spanLabel(span))));
            }
            for (const period of timeline.periods) {
              if (!period.start) continue;
              const trial = period.offer && period.offer.discount_type === 'free_trial';
              const classes = ['period', trial ? 'trial' : '', period.revocation_date ? 'revoked' : '', period.is_upgraded ? 'upgraded' : ''].filter(Boolean).join(' ');
              const left = x(ms(period.start));
              const label = (trial ? 'Free trial' : 'Paid period') + ' ' + period.transaction_id + ' · ' + (period.product_id || '') + ' · ' +
                when(period.start) + ' – ' + (period.end ? when(period.end) : 'no end');
              const open = () => showRecords(recordPanel, period.records, records, label);
              picture.appendChild(svg('rect', { class: classes, x: left, y: 18, width: Math.max(3, (period.end ? x(ms(period.end)) : left + 3) - left), height: 26, rx: 3,
                tabindex: 0, role: 'button', 'aria-label': label, 'data-kind': 'period', 'data-transaction-id': period.transaction_id,
                'data-product-id': period.product_id || '', 'data-start': period.start, 'data-end': period.end || '', 'data-trial': trial ? 'true' : 'false',
                on: { click: open, keydown: (event) => { if (event.key === 'Enter') open(); } } }, svg('title', {}, label)));
            }
            for (const span of timeline.spans) {
              picture.appendChild(svg('rect', { class: 'span ' + span.status, x: x(ms(span.from)), y: 52, width: Math.max(1, x(end(span.to)) - x(ms(span.from))), height: 10,
                'data-kind': 'span', 'data-status': span.status, 'data-from': span.from, 'data-to': span.to || '', on: openSpan(span) },
                svg('title', {}, spanLabel(span))));
            }
            for (const mark of timeline.marks) {
              const at = x(ms(mark.at));
              const label = MARKS[mark.kind] + ' · ' + when(mark.at) + (mark.product_id ? ' · ' + mark.product_id : '') +
                (mark.previous_product_id ? ' (was ' + mark.previous_product_id + ')' : '') + (mark.reason ? ' · ' + mark.reason : '');
              const symbol = { revocation: 'M-5 -5 L5 5 M5 -5 L-5 5', product_change: 'M0 -6 L6 0 L0 6 L-6 0 Z', renewal_product_change: 'M0 -6 L6 0 L0 6 L-6 0 Z' }[mark.kind] ||
                'M-5 0 A5 5 0 1 0 5 0 A5 5 0 1 0 -5 0 Z';
              const open = () => showRecords(recordPanel, mark.records, records, label);
              picture.appendChild(svg('g', { class: 'mark ' + mark.kind, tabindex: 0, role: 'button', 'aria-label': label, 'data-kind': 'mark',
                'data-mark': mark.kind, 'data-at': mark.at, on: { click: open, keydown: (event) => { if (event.key === 'Enter') open(); } } },
                svg('line', { x1: at, x2: at, y1: 8, y2: 80 }), svg('path', { d: symbol, transform: 'translate(' + at + ' 80)' }),
                svg('title', {}, label)));
            }
            picture.appendChild(svg('line', { class: 'axis', x1: 0, x2: width, y1: 104.5, y2: 104.5 }));
            let previous = -Infinity;
            const first = new Date(t0);
            const monthsApart = Math.max(1, Math.ceil((t1 - t0) / (30.4 * 86400000) / Math.max(1, Math.floor(width / 70))));
            for (let cursor = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1); cursor < t1;) {
              const date = new Date(cursor);
              const left = x(cursor);
              picture.appendChild(svg('line', { class: 'tick', x1: left, x2: left, y1: 100, y2: 110 }));
              if (left - previous > 50 && left + 48 < width) {
                picture.appendChild(svg('text', { x: left + 2, y: 122 }, MONTHS[date.getUTCMonth()] + ' ' + date.getUTCFullYear()));
                previous = left;
              }
              cursor = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + monthsApart, 1);
            }
            const nowX = x(ms(now));
            picture.appendChild(svg('line', { class: 'now', x1: nowX, x2: nowX, y1: 4, y2: 110 }));
            picture.appendChild(svg('text', { x: Math.min(nowX + 3, width - 24), y: 140 }, 'now'));
            const cursorLine = svg('line', { class: 'asof', x1: -10, x2: -10, y1: 4, y2: 110, visibility: 'hidden' });
            picture.appendChild(cursorLine);
            picture.appendChild(svg('rect', { class: 'axis-hit', x: 0, y: 96, width, height: 34, 'data-kind': 'axis',
              on: { click: (event) => {
                const box = picture.getBoundingClientRect();
                const px = ((event.clientX - box.left) / box.width) * width;
                cursorLine.setAttribute('x1', px);
                cursorLine.setAttribute('x2', px);
                cursorLine.setAttribute('visibility', 'visible');
                showAsOf(asOfPanel, originalTransactionId, new Date(Math.round(timeAt(px))).toISOString(), timeline);
              } } }, svg('title', {}, 'Click for the state as of that instant')));
            box.replaceChildren(picture, el('ul', { class: 'legend' },
              el('li', {}, el('span', { class: 'swatch s-period' }), 'paid period'), el('li', {}, el('span', { class: 'swatch s-trial' }), 'free trial'),
              el('li', {}, el('span', { class: 'swatch s-grace' }), 'grace period'), el('li', {}, el('span', { class: 'swatch s-retry' }), 'billing retry'),
              el('li', {}, el('span', { class: 'swatch s-revocation' }), 'refund / revocation'), el('li', {}, el('span', { class: 'swatch s-change' }), 'product change'),
              el('li', {}, el('span', { class: 'swatch s-renew' }), 'auto-renew off'), el('li', { class: 'muted' }, 'click the axis for the state then')),
              recordList(timeline, records, recordPanel));
          }

          async function showAsOf(panel, originalTransactionId, iso, timeline) {
            const firstKnown = timeline.spans.length ? ms(timeline.spans[0].from) : Infinity;
            if (ms(iso) < firstKnown) {
              panel.replaceChildren(el('h3', {}, 'As of ' + when(iso)), el('p', { class: 'asof-state' }, 'Nothing of this subscription was known yet.'));
              return;
            }
            panel.replaceChildren(el('p', { class: 'muted' }, 'Loading the state as of ' + when(iso) + '…'));
            try {
              const state = await api('/v1/subscriptions/' + enc(originalTransactionId) + '?as_of=' + enc(iso));
              panel.replaceChildren(el('h3', {}, 'As of ' + when(iso) + ': ', el('span', { class: 'badge asof-state ' + state.status, 'data-status': state.status }, WORDS[state.status]),
                ' ', state.entitled ? 'entitled' : 'not entitled'), stateList(state, ['status', 'entitled', 'expires_date', 'grace_period_expires_date', 'will_renew',
                'latest_transaction_id', 'revocation_date', 'last_signed_date', 'as_of']));
            } catch (error) {
              panel.replaceChildren(el('p', { class: 'error' }, 'The state as of ' + when(iso) + ' failed: ' + error.message));
            }
          }

          function showRecords(panel, ids, records, label) {
            const items = ids.map((id) => records.get(id)).filter(Boolean);
            const detail = el('div', { class: 'record' });
            const choices = el('div', { class: 'choices' });
            const select = (item, button) => {
              for (const other of choices.children) other.setAttribute('aria-pressed', 'false');
              if (button) button.setAttribute('aria-pressed', 'true');
              detail.replaceChildren(recordDetail(item));
            };
            items.forEach((item, index) => {
              const button = el('button', { type: 'button', 'aria-pressed': index === 0 ? 'true' : 'false', on: { click: () => select(item, button) } },
                recordTitle(item));
              choices.appendChild(button);
            });
            panel.replaceChildren(el('h3', {}, label), items.length > 1 ? choices : null, detail);
            if (items.length) select(items[0], choices.firstChild); else detail.replaceChildren(el('p', { class: 'muted' }, 'No stored record.'));
            panel.scrollIntoView({ block: 'nearest' });
          }

          const recordTitle = (item) => [item.kind, item.notification_type, item.notification_subtype].filter(Boolean).join(' · ') + ' · ' + when(item.received_at);

          function recordDetail(item) {
            const chain = item.chain || {};
            return el('div', { 'data-record-id': item.id },
              el('dl', { class: 'state' },
                el('dt', {}, 'kind'), el('dd', { 'data-field': 'kind' }, item.kind),
                item.notification_type ? [el('dt', {}, 'notification'), el('dd', { 'data-field': 'notification_type' },
                  [item.notification_type, item.notification_subtype].filter(Boolean).join(' · '))] : null,
                item.notification_uuid ? [el('dt', {}, 'notification uuid'), el('dd', { class: 'mono' }, item.notification_uuid)] : null,
                item.notification_signed_date ? [el('dt', {}, 'signed'), el('dd', {}, when(item.notification_signed_date))] : null,
                el('dt', {}, 'received'), el('dd', { 'data-field': 'received_at' }, when(item.received_at)),
                el('dt', {}, 'received through'), el('dd', {}, item.received_through),
                el('dt', {}, 'leaf SHA-256'), el('dd', { class: 'mono', 'data-field': 'leaf_sha256' }, chain.leaf_sha256 || '—'),
                el('dt', {}, 'root SHA-256'), el('dd', { class: 'mono', 'data-field': 'root_sha256' }, chain.root_sha256 || '—')),
              el('pre', { class: 'json' }, JSON.stringify(item.record, null, 2)));
          }

          function recordList(timeline, records, panel) {
            return el('details', { class: 'records' }, el('summary', {}, 'Every stored record (' + timeline.records.length + ')'),
              el('div', { class: 'scroll' }, el('table', {}, el('tbody', {}, timeline.records.map((item) => el('tr', {},
                el('td', {}, when(item.received_at)), el('td', {}, [item.kind, item.notification_type, item.notification_subtype].filter(Boolean).join(' · ')),
                el('td', {}, el('button', { type: 'button', class: 'quiet', on: { click: () => showRecords(panel, [item.id], records, recordTitle(item)) } }, 'Show'))))))));
          }

          if (tokenRequired && !token) showSignIn(''); else showApp();
        })();
        """#
}
