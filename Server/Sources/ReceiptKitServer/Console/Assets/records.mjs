// The stored records behind a part of the timeline: kind, notification type and subtype, UUID,
// dates, the route it arrived through, the SHA-256 of its chain's leaf and root, and its JSON.

import { el } from './dom.mjs';
import { notificationKind, recordKind, recordTitle, when } from './format.mjs';

/**
 * Shows records in a panel: the first, and a choice among them when there are several.
 * @param {HTMLElement} panel
 * @param {string[]} ids The records' ids.
 * @param {Map<string, object>} records The timeline's records by id.
 * @param {string} label What the records are behind.
 */
export function showRecords(panel, ids, records, label) {
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

// One record: what it is, where it came from, its chain, its JSON.
function recordDetail(item) {
  const chain = item.chain || {};
  return el('div', { 'data-record-id': item.id },
    el('dl', { class: 'state' },
      el('dt', {}, 'kind'), el('dd', { 'data-field': 'kind' }, item.kind),
      item.notification_type ? [el('dt', {}, 'notification'), el('dd', { 'data-field': 'notification_type' },
        notificationKind(item.notification_type, item.notification_subtype))] : null,
      item.notification_uuid ? [el('dt', {}, 'notification uuid'), el('dd', { class: 'mono' }, item.notification_uuid)] : null,
      item.notification_signed_date ? [el('dt', {}, 'signed'), el('dd', {}, when(item.notification_signed_date))] : null,
      el('dt', {}, 'received'), el('dd', { 'data-field': 'received_at' }, when(item.received_at)),
      el('dt', {}, 'received through'), el('dd', {}, item.received_through),
      el('dt', {}, 'leaf SHA-256'), el('dd', { class: 'mono', 'data-field': 'leaf_sha256' }, chain.leaf_sha256 || '—'),
      el('dt', {}, 'root SHA-256'), el('dd', { class: 'mono', 'data-field': 'root_sha256' }, chain.root_sha256 || '—')),
    el('pre', { class: 'json' }, JSON.stringify(item.record, null, 2)));
}

/**
 * Every record of a timeline, each with a button that shows it in the panel.
 * @param {{records: object[]}} timeline
 * @param {Map<string, object>} records The same records by id.
 * @param {HTMLElement} panel
 * @returns {HTMLElement} A `details` element, closed.
 */
export function recordList(timeline, records, panel) {
  return el('details', { class: 'records' }, el('summary', {}, 'Every stored record (' + timeline.records.length + ')'),
    el('div', { class: 'scroll' }, el('table', {}, el('tbody', {}, timeline.records.map((item) => el('tr', {},
      el('td', {}, when(item.received_at)), el('td', {}, recordKind(item)),
      el('td', {}, el('button', { type: 'button', class: 'quiet', on: { click: () => showRecords(panel, [item.id], records, recordTitle(item)) } }, 'Show'))))))));
}
