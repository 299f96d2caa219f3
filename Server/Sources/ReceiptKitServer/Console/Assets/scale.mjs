// The charts' arithmetic: the timeline's time axis and its month ticks, the notification chart's
// stacked bars. Pure functions of the data and a width in pixels (no DOM, no clock, months in
// UTC whatever the viewer's time zone), tested by Server/Tests/ConsoleAssetsTests/scale.test.mjs.

import { instant, MONTHS } from './format.mjs';

/** A day in milliseconds. */
export const DAY = 86_400_000;

// The timeline's margin at each end, in pixels.
const MARGIN = 6;

/**
 * A time axis across a width: every instant given on it, with 3 % of the range (at least a
 * day) to spare at each end, so that one instant, or several equal ones, stand mid-width.
 * @param {number[]} instants Milliseconds since 1970; those not finite are left out.
 * @param {number} width The axis' width in pixels (more than twice the margin of 6).
 * @returns {{t0: number, t1: number, x: (time: number) => number, timeAt: (px: number) => number}}
 *   The first and last instant of the axis, the pixel of an instant and the instant of a pixel.
 * @throws {RangeError} When no instant is finite: there is nothing to place the axis on.
 */
export function timeScale(instants, width) {
  let low = Infinity;
  let high = -Infinity;
  for (const time of instants) {
    if (!Number.isFinite(time)) continue;
    low = Math.min(low, time);
    high = Math.max(high, time);
  }
  if (low > high) throw new RangeError('no instant to draw on the time axis');
  const pad = Math.max((high - low) * 0.03, DAY);
  const t0 = low - pad;
  const t1 = high + pad;
  return {
    t0,
    t1,
    x: (time) => MARGIN + ((time - t0) / (t1 - t0)) * (width - 2 * MARGIN),
    timeAt: (px) => t0 + ((px - MARGIN) / (width - 2 * MARGIN)) * (t1 - t0),
  };
}

/**
 * Every instant a subscription's timeline shows: now, each period's start and end, each status
 * span's start, each mark.
 * @param {{periods: object[], spans: object[], marks: object[]}} timeline As `GET
 *   /v1/subscriptions/{id}/timeline` answers one.
 * @param {string} now The server's now.
 * @returns {number[]} Milliseconds since 1970; `NaN` for an end that is not there.
 */
export function timelineInstants(timeline, now) {
  const instants = [instant(now)];
  for (const period of timeline.periods) instants.push(instant(period.start), instant(period.end));
  for (const span of timeline.spans) instants.push(instant(span.from));
  for (const mark of timeline.marks) instants.push(instant(mark.at));
  return instants;
}

/**
 * The month ticks of a time axis: the first of each month after its start, every month or, when
 * the axis is too narrow for that, every few months (about one per 70 pixels); a tick is
 * labelled `Mar 2024` when it stands more than 50 pixels after the last label and its label fits
 * before the right end.
 * @param {{t0: number, t1: number, x: (time: number) => number}} scale From {@link timeScale}.
 * @param {number} width The axis' width in pixels.
 * @returns {{time: number, left: number, label: string | null}[]} Left to right.
 */
export function monthTicks(scale, width) {
  const { t0, t1, x } = scale;
  const ticks = [];
  let previous = -Infinity;
  const first = new Date(t0);
  const monthsApart = Math.max(1, Math.ceil((t1 - t0) / (30.4 * DAY) / Math.max(1, Math.floor(width / 70))));
  for (let cursor = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1); cursor < t1;) {
    const date = new Date(cursor);
    const left = x(cursor);
    let label = null;
    if (left - previous > 50 && left + 48 < width) {
      label = MONTHS[date.getUTCMonth()] + ' ' + date.getUTCFullYear();
      previous = left;
    }
    ticks.push({ time: cursor, left, label });
    cursor = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + monthsApart, 1);
  }
  return ticks;
}

/** The notification chart's height, and its room above and below the bars, in pixels. */
export const CHART = { height: 170, top: 12, bottom: 22 };

/** How many colours the chart's notification types get: the rarest share the last. */
export const CHART_COLOURS = 8;

/**
 * The notification chart: one bar per day, stacked by type, the most frequent type at the
 * bottom, all on one scale whose top is the busiest day (at least 1, so that no day divides by
 * zero).
 * @param {{day: string, total: number, by_type: {type: string, count: number}[]}[]} days As
 *   `GET /v1/overview` answers them, oldest first.
 * @param {number} width The chart's width in pixels.
 * @returns {{types: string[], totals: Map<string, number>, colour: (type: string) => number, maximum: number,
 *   bars: {day: string, total: number, label: string | null, segments: {type: string, count: number,
 *   x: number, y: number, width: number, height: number}[]}[]}} The types, most frequent first
 *   (ties by name), each type's total, its colour's index (below {@link CHART_COLOURS}), the
 *   scale's top, and each day's bar: its segments bottom up, labelled (`05-01`) every 7th day
 *   and on the last.
 */
export function notificationChart(days, width) {
  const { height, top, bottom } = CHART;
  const totals = new Map();
  for (const item of days) for (const pair of item.by_type) totals.set(pair.type, (totals.get(pair.type) || 0) + pair.count);
  const types = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || (a < b ? -1 : 1));
  const colour = (type) => Math.min(types.indexOf(type), CHART_COLOURS - 1);
  const maximum = days.reduce((most, item) => Math.max(most, item.total), 1);
  const step = width / days.length;
  const scale = (height - top - bottom) / maximum;
  const bars = days.map((item, index) => {
    let y = height - bottom;
    const segments = [...item.by_type].sort((a, b) => types.indexOf(a.type) - types.indexOf(b.type)).map((pair) => {
      const h = pair.count * scale;
      y -= h;
      return { type: pair.type, count: pair.count, x: index * step + 1, y, width: Math.max(1, step - 2), height: h };
    });
    const label = index % 7 === 0 || index === days.length - 1 ? item.day.slice(5) : null;
    return { day: item.day, total: item.total, x: index * step + 1, label, segments };
  });
  return { types, totals, colour, maximum, bars };
}
