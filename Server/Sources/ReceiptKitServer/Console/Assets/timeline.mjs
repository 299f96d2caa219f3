// A subscription's timeline as SVG on a time axis: each paid period a bar, the status under the
// bars with grace period and billing retry shaded across, the marks (refund, product change,
// auto-renew), month ticks and now; a click on a part opens the records behind it, a click on
// the axis the state as of that instant. The arithmetic is scale.mjs's.

import { el, svg } from './dom.mjs';
import { instant, isFreeTrial, markLabel, periodLabel, spanLabel, statusWords, when } from './format.mjs';
import { recordList, showRecords } from './records.mjs';
import { monthTicks, timelineInstants, timeScale } from './scale.mjs';
import { AS_OF_FIELDS, stateList } from './state.mjs';

// Each mark's symbol, centred on its instant; a circle for the others.
const SYMBOLS = { revocation: 'M-5 -5 L5 5 M5 -5 L-5 5', product_change: 'M0 -6 L6 0 L0 6 L-6 0 Z', renewal_product_change: 'M0 -6 L6 0 L0 6 L-6 0 Z' };
const CIRCLE = 'M-5 0 A5 5 0 1 0 5 0 A5 5 0 1 0 -5 0 Z';

/**
 * Draws a subscription's timeline into its box at the width the box has now.
 * @param {object} options
 * @param {HTMLElement} options.box
 * @param {object} options.timeline One subscription of `GET /v1/subscriptions/{id}/timeline`.
 * @param {string} options.now The server's now, from the same answer.
 * @param {string} options.originalTransactionId
 * @param {HTMLElement} options.asOfPanel Where the state as of a clicked instant goes.
 * @param {HTMLElement} options.recordPanel Where the records behind a clicked part go.
 * @param {(path: string) => Promise<any>} options.api
 */
export function drawTimeline({ box, timeline, now, originalTransactionId, asOfPanel, recordPanel, api }) {
  const width = Math.max(280, box.clientWidth || 600);
  const height = 150;
  const scale = timeScale(timelineInstants(timeline, now), width);
  const { x, t1 } = scale;
  const end = (text) => (text ? instant(text) : t1);
  const records = new Map(timeline.records.map((item) => [item.id, item]));
  const picture = svg('svg', { class: 'timeline', viewBox: '0 0 ' + width + ' ' + height, width, height, role: 'img',
    'aria-label': 'Timeline of subscription ' + originalTransactionId });
  const openSpan = (span) => ({ click: () => showRecords(recordPanel, span.records, records, spanLabel(span)) });
  const openOnClickOrEnter = (open) => ({ click: open, keydown: (event) => { if (event.key === 'Enter') open(); } });
  for (const span of timeline.spans.filter((item) => item.status === 'grace_period' || item.status === 'billing_retry')) {
    picture.appendChild(svg('rect', { class: 'shade ' + span.status, x: x(instant(span.from)), y: 8,
      width: Math.max(1, x(end(span.to)) - x(instant(span.from))), height: 96,
      'data-kind': 'shade', 'data-status': span.status, 'data-from': span.from, 'data-to': span.to || '', on: openSpan(span) },
      svg('title', {}, spanLabel(span))));
  }
  for (const period of timeline.periods) {
    if (!period.start) continue;
    const trial = isFreeTrial(period);
    const classes = ['period', trial ? 'trial' : '', period.revocation_date ? 'revoked' : '', period.is_upgraded ? 'upgraded' : ''].filter(Boolean).join(' ');
    const left = x(instant(period.start));
    const label = periodLabel(period);
    const open = () => showRecords(recordPanel, period.records, records, label);
    picture.appendChild(svg('rect', { class: classes, x: left, y: 18, width: Math.max(3, (period.end ? x(instant(period.end)) : left + 3) - left), height: 26, rx: 3,
      tabindex: 0, role: 'button', 'aria-label': label, 'data-kind': 'period', 'data-transaction-id': period.transaction_id,
      'data-product-id': period.product_id || '', 'data-start': period.start, 'data-end': period.end || '', 'data-trial': trial ? 'true' : 'false',
      on: openOnClickOrEnter(open) }, svg('title', {}, label)));
  }
  for (const span of timeline.spans) {
    picture.appendChild(svg('rect', { class: 'span ' + span.status, x: x(instant(span.from)), y: 52,
      width: Math.max(1, x(end(span.to)) - x(instant(span.from))), height: 10,
      'data-kind': 'span', 'data-status': span.status, 'data-from': span.from, 'data-to': span.to || '', on: openSpan(span) },
      svg('title', {}, spanLabel(span))));
  }
  for (const mark of timeline.marks) {
    const at = x(instant(mark.at));
    const label = markLabel(mark);
    const symbol = Object.hasOwn(SYMBOLS, mark.kind) ? SYMBOLS[mark.kind] : CIRCLE;
    const open = () => showRecords(recordPanel, mark.records, records, label);
    picture.appendChild(svg('g', { class: 'mark ' + mark.kind, tabindex: 0, role: 'button', 'aria-label': label, 'data-kind': 'mark',
      'data-mark': mark.kind, 'data-at': mark.at, on: openOnClickOrEnter(open) },
      svg('line', { x1: at, x2: at, y1: 8, y2: 80 }), svg('path', { d: symbol, transform: 'translate(' + at + ' 80)' }),
      svg('title', {}, label)));
  }
  picture.appendChild(svg('line', { class: 'axis', x1: 0, x2: width, y1: 104.5, y2: 104.5 }));
  for (const tick of monthTicks(scale, width)) {
    picture.appendChild(svg('line', { class: 'tick', x1: tick.left, x2: tick.left, y1: 100, y2: 110 }));
    if (tick.label !== null) picture.appendChild(svg('text', { x: tick.left + 2, y: 122 }, tick.label));
  }
  const nowX = x(instant(now));
  picture.appendChild(svg('line', { class: 'now', x1: nowX, x2: nowX, y1: 4, y2: 110 }));
  picture.appendChild(svg('text', { x: Math.min(nowX + 3, width - 24), y: 140 }, 'now'));
  const cursorLine = svg('line', { class: 'asof', x1: -10, x2: -10, y1: 4, y2: 110, visibility: 'hidden' });
  picture.appendChild(cursorLine);
  picture.appendChild(svg('rect', { class: 'axis-hit', x: 0, y: 96, width, height: 34, 'data-kind': 'axis',
    on: { click: (event) => {
      const bounds = picture.getBoundingClientRect();
      const px = ((event.clientX - bounds.left) / bounds.width) * width;
      cursorLine.setAttribute('x1', px);
      cursorLine.setAttribute('x2', px);
      cursorLine.setAttribute('visibility', 'visible');
      showAsOf({ panel: asOfPanel, originalTransactionId, at: new Date(Math.round(scale.timeAt(px))).toISOString(), timeline, api });
    } } }, svg('title', {}, 'Click for the state as of that instant')));
  box.replaceChildren(picture, el('ul', { class: 'legend' },
    el('li', {}, el('span', { class: 'swatch s-period' }), 'paid period'), el('li', {}, el('span', { class: 'swatch s-trial' }), 'free trial'),
    el('li', {}, el('span', { class: 'swatch s-grace' }), 'grace period'), el('li', {}, el('span', { class: 'swatch s-retry' }), 'billing retry'),
    el('li', {}, el('span', { class: 'swatch s-revocation' }), 'refund / revocation'), el('li', {}, el('span', { class: 'swatch s-change' }), 'product change'),
    el('li', {}, el('span', { class: 'swatch s-renew' }), 'auto-renew off'), el('li', { class: 'muted' }, 'click the axis for the state then')),
    recordList(timeline, records, recordPanel));
}

// The state as of an instant clicked on the axis (GET /v1/subscriptions/{id}?as_of=…); before
// the first thing known of the subscription, nothing to ask.
async function showAsOf({ panel, originalTransactionId, at, timeline, api }) {
  const firstKnown = timeline.spans.length ? instant(timeline.spans[0].from) : Infinity;
  if (instant(at) < firstKnown) {
    panel.replaceChildren(el('h3', {}, 'As of ' + when(at)), el('p', { class: 'asof-state' }, 'Nothing of this subscription was known yet.'));
    return;
  }
  panel.replaceChildren(el('p', { class: 'muted' }, 'Loading the state as of ' + when(at) + '…'));
  try {
    const state = await api('/v1/subscriptions/' + encodeURIComponent(originalTransactionId) + '?as_of=' + encodeURIComponent(at));
    panel.replaceChildren(el('h3', {}, 'As of ' + when(at) + ': ',
      el('span', { class: 'badge asof-state ' + state.status, 'data-status': state.status }, statusWords(state.status)),
      ' ', state.entitled ? 'entitled' : 'not entitled'), stateList(state, AS_OF_FIELDS));
  } catch (error) {
    panel.replaceChildren(el('p', { class: 'error' }, 'The state as of ' + when(at) + ' failed: ' + error.message));
  }
}
