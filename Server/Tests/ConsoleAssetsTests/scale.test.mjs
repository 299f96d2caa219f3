// scale.mjs: the timeline's time axis and month ticks, the notification chart's bars.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inEachTimeZone, ZONES } from './support.mjs';
import {
  CHART, CHART_COLOURS, DAY, monthTicks, notificationChart, timelineInstants, timeScale,
} from '../../Sources/ReceiptKitServer/Console/Assets/scale.mjs';

const close = (actual, expected, message) => assert.ok(Math.abs(actual - expected) < 1e-6, `${message ?? ''} ${actual} ≠ ${expected}`);

describe('timeScale', () => {
  const width = 600;

  test('one instant stands mid-width, with a day to spare on each side', () => {
    const at = Date.UTC(2024, 4, 1, 9, 30);
    const scale = timeScale([at], width);
    assert.equal(scale.t0, at - DAY);
    assert.equal(scale.t1, at + DAY);
    close(scale.x(at), width / 2);
  });

  test('several equal instants (a zero range) are one instant', () => {
    const at = Date.UTC(2024, 4, 1);
    const scale = timeScale([at, at, at], width);
    assert.deepEqual([scale.t0, scale.t1], [at - DAY, at + DAY]);
    close(scale.x(at), width / 2);
  });

  test('a range longer than 33 days gets 3 % of it on each side, a shorter one a day', () => {
    const low = Date.UTC(2024, 0, 1);
    const long = timeScale([low, low + 100 * DAY], width);
    assert.deepEqual([long.t0, long.t1], [low - 3 * DAY, low + 103 * DAY]);
    const short = timeScale([low, low + 10 * DAY], width);
    assert.deepEqual([short.t0, short.t1], [low - DAY, low + 11 * DAY]);
  });

  test('the axis\' ends are 6 pixels in; timeAt undoes x; later is further right', () => {
    const low = Date.UTC(2024, 0, 1);
    const scale = timeScale([low + 40 * DAY, low, low + 7 * DAY], width);
    close(scale.x(scale.t0), 6);
    close(scale.x(scale.t1), width - 6);
    for (const time of [low, low + 7 * DAY, low + 40 * DAY, scale.t0, scale.t1]) close(scale.timeAt(scale.x(time)), time);
    for (const px of [0, 6, 123.5, 594, 600]) close(scale.x(scale.timeAt(px)), px);
    assert.ok(scale.x(low) < scale.x(low + 1) && scale.x(low + 7 * DAY) < scale.x(low + 40 * DAY));
  });

  test('instants that are not finite are left out', () => {
    const at = Date.UTC(2024, 4, 1);
    const scale = timeScale([NaN, at, Infinity, -Infinity, NaN], width);
    assert.deepEqual([scale.t0, scale.t1], [at - DAY, at + DAY]);
  });

  test('with no instant at all there is no axis: a RangeError, not NaN pixels', () => {
    assert.throws(() => timeScale([], width), RangeError);
    assert.throws(() => timeScale([NaN, NaN], width), RangeError);
  });
});

describe('timelineInstants', () => {
  const now = '2024-06-01T00:00:00.000Z';

  test('an empty timeline is its now alone, one point the scale centres', () => {
    const instants = timelineInstants({ periods: [], spans: [], marks: [] }, now);
    assert.deepEqual(instants, [Date.UTC(2024, 5, 1)]);
    close(timeScale(instants, 400).x(Date.UTC(2024, 5, 1)), 200);
  });

  test('now, each period\'s start and end, each span\'s start, each mark; an open end is no instant', () => {
    const timeline = {
      periods: [{ start: '2024-01-01T00:00:00.000Z', end: '2024-02-01T00:00:00.000Z' }, { start: '2024-02-01T00:00:00.000Z', end: null }],
      spans: [{ from: '2024-01-01T00:00:00.000Z', to: '2024-03-01T00:00:00.000Z' }],
      marks: [{ at: '2024-02-15T12:00:00.000Z' }],
    };
    const instants = timelineInstants(timeline, now);
    assert.equal(instants.length, 7);
    assert.deepEqual(instants.filter(Number.isFinite), [
      Date.UTC(2024, 5, 1), Date.UTC(2024, 0, 1), Date.UTC(2024, 1, 1), Date.UTC(2024, 1, 1), Date.UTC(2024, 0, 1), Date.UTC(2024, 1, 15, 12),
    ]);
    // The axis runs from the first period's start to now, 3 % of that to spare on each side.
    const scale = timeScale(instants, 600);
    const range = Date.UTC(2024, 5, 1) - Date.UTC(2024, 0, 1);
    assert.deepEqual([scale.t0, scale.t1], [Date.UTC(2024, 0, 1) - range * 0.03, Date.UTC(2024, 5, 1) + range * 0.03]);
  });
});

describe('monthTicks', () => {
  test('an axis within one month has no tick', () => {
    const at = Date.UTC(2024, 4, 15);
    assert.deepEqual(monthTicks(timeScale([at], 600), 600), []);
    assert.deepEqual(monthTicks(timeScale([Date.UTC(2024, 4, 3), Date.UTC(2024, 4, 27)], 600), 600), []);
  });

  test('one instant on the first of a month: that month\'s tick, labelled, mid-width', () => {
    const at = Date.UTC(2024, 2, 1);
    const ticks = monthTicks(timeScale([at], 600), 600);
    assert.equal(ticks.length, 1);
    assert.equal(ticks[0].time, at);
    close(ticks[0].left, 300);
    assert.equal(ticks[0].label, 'Mar 2024');
  });

  test('across a new year: the first of each month, labelled with its year', () => {
    const scale = timeScale([Date.UTC(2023, 10, 15), Date.UTC(2024, 1, 15)], 1000);
    const ticks = monthTicks(scale, 1000);
    assert.deepEqual(ticks.map((tick) => tick.time), [Date.UTC(2023, 11, 1), Date.UTC(2024, 0, 1), Date.UTC(2024, 1, 1)]);
    assert.deepEqual(ticks.map((tick) => tick.label), ['Dec 2023', 'Jan 2024', 'Feb 2024']);
    for (const tick of ticks) close(tick.left, scale.x(tick.time));
  });

  test('a long axis on a narrow screen: every few months, about one tick per 70 pixels, labels apart and inside', () => {
    for (const width of [280, 390, 600, 1240]) {
      const scale = timeScale([Date.UTC(2021, 0, 10), Date.UTC(2024, 6, 20)], width);
      const ticks = monthTicks(scale, width);
      assert.ok(ticks.length >= 1 && ticks.length <= Math.floor(width / 70) + 1, `${width}: ${ticks.length} ticks`);
      // The same number of months between ticks, each on a first of a month at midnight UTC.
      const months = ticks.map((tick) => new Date(tick.time)).map((date) => date.getUTCFullYear() * 12 + date.getUTCMonth());
      for (const tick of ticks) assert.equal(new Date(tick.time).toISOString().slice(8), '01T00:00:00.000Z');
      const gaps = new Set(months.slice(1).map((month, index) => month - months[index]));
      assert.ok(gaps.size <= 1 && [...gaps].every((gap) => gap >= 1), `${width}: gaps ${[...gaps]}`);
      assert.ok(ticks.every((tick) => tick.time > scale.t0 && tick.time < scale.t1));
      const labelled = ticks.filter((tick) => tick.label !== null);
      assert.ok(labelled.length >= 1, `${width}: no label`);
      for (const [index, tick] of labelled.entries()) {
        assert.ok(tick.left + 48 < width, `${width}: ${tick.label} at ${tick.left} runs off`);
        if (index > 0) assert.ok(tick.left - labelled[index - 1].left > 50, `${width}: ${tick.label} too close`);
      }
    }
  });

  test('a tick too close to the right end for its label stays unlabelled', () => {
    // Mar 1 about 35 pixels from the right end of a 600-pixel axis.
    const width = 600;
    const end = Date.UTC(2024, 2, 1, 12);
    const scale = timeScale([Date.UTC(2024, 1, 2), end], width);
    const ticks = monthTicks(scale, width);
    assert.deepEqual(ticks.map((tick) => tick.time), [Date.UTC(2024, 2, 1)]);
    assert.ok(ticks[0].left + 48 >= width);
    assert.equal(ticks[0].label, null);
  });

  test('months are UTC months in every time zone: the same ticks and labels', () => {
    // From the evening of Feb 29 in UTC (already March east of Greenwich) to April 20.
    const scale = timeScale([Date.UTC(2024, 1, 29, 20), Date.UTC(2024, 3, 20)], 800);
    let first = null;
    inEachTimeZone(ZONES, (zone) => {
      const ticks = monthTicks(scale, 800);
      assert.deepEqual(ticks.map((tick) => tick.label), ['Mar 2024', 'Apr 2024'], zone);
      if (first === null) first = ticks; else assert.deepEqual(ticks, first, zone);
    });
  });
});

describe('notificationChart', () => {
  const days = (list) => list.map(([day, byType]) => ({
    day, total: byType.reduce((sum, [, count]) => sum + count, 0), by_type: byType.map(([type, count]) => ({ type, count })),
  }));
  const barSpace = CHART.height - CHART.top - CHART.bottom;

  test('no days: no bars, no types, a scale whose top is 1', () => {
    const chart = notificationChart([], 600);
    assert.deepEqual(chart.bars, []);
    assert.deepEqual(chart.types, []);
    assert.equal(chart.maximum, 1);
  });

  test('one day without notifications: one bar, labelled, with nothing stacked, and no division by zero', () => {
    const chart = notificationChart(days([['2024-05-01', []]]), 600);
    assert.equal(chart.maximum, 1);
    assert.equal(chart.bars.length, 1);
    assert.deepEqual(chart.bars[0].segments, []);
    assert.equal(chart.bars[0].label, '05-01');
    assert.equal(chart.bars[0].x, 1);
  });

  test('types by total, most first, ties by name; the busiest day fills the height', () => {
    const chart = notificationChart(days([
      ['2024-05-01', [['SUBSCRIBED', 1], ['DID_RENEW', 2]]],
      ['2024-05-02', [['REFUND', 3], ['DID_RENEW', 1]]],
      ['2024-05-03', [['EXPIRED', 1]]],
    ]), 300);
    assert.deepEqual(chart.types, ['DID_RENEW', 'REFUND', 'EXPIRED', 'SUBSCRIBED']);
    assert.deepEqual([...chart.totals], [['SUBSCRIBED', 1], ['DID_RENEW', 3], ['REFUND', 3], ['EXPIRED', 1]]);
    assert.equal(chart.maximum, 4);
    const [first, busiest] = chart.bars;
    // Stacked bottom up in the types' order, whatever order the day lists them in.
    assert.deepEqual(first.segments.map((segment) => segment.type), ['DID_RENEW', 'SUBSCRIBED']);
    assert.deepEqual(busiest.segments.map((segment) => segment.type), ['DID_RENEW', 'REFUND']);
    const bottom = CHART.height - CHART.bottom;
    close(busiest.segments[0].y + busiest.segments[0].height, bottom);
    close(busiest.segments[1].y + busiest.segments[1].height, busiest.segments[0].y);
    close(busiest.segments.at(-1).y, CHART.top);
    close(first.segments.reduce((sum, segment) => sum + segment.height, 0), barSpace * 3 / 4);
    // A hundred pixels per day, a pixel's gap on each side.
    assert.deepEqual(chart.bars.map((bar) => bar.x), [1, 101, 201]);
    assert.ok(chart.bars.every((bar) => bar.segments.every((segment) => segment.x === bar.x && segment.width === 98)));
  });

  test('30 days: labels on every 7th day and the last', () => {
    const list = Array.from({ length: 30 }, (_, index) => [new Date(Date.UTC(2024, 4, 1) + index * DAY).toISOString().slice(0, 10), []]);
    const chart = notificationChart(days(list), 600);
    assert.deepEqual(chart.bars.flatMap((bar, index) => (bar.label === null ? [] : [[index, bar.label]])),
      [[0, '05-01'], [7, '05-08'], [14, '05-15'], [21, '05-22'], [28, '05-29'], [29, '05-30']]);
  });

  test('a bar is at least a pixel wide however many days', () => {
    const list = Array.from({ length: 400 }, (_, index) => [`2024-01-${index}`, [['DID_RENEW', 1]]]);
    const chart = notificationChart(days(list), 280);
    assert.ok(chart.bars.every((bar) => bar.segments[0].width === 1));
  });

  test('colours: one per type, the rarest types sharing the last', () => {
    const types = Array.from({ length: CHART_COLOURS + 2 }, (_, index) => [`TYPE_${String(index).padStart(2, '0')}`, 100 - index]);
    const chart = notificationChart(days([['2024-05-01', types]]), 600);
    assert.deepEqual(chart.types.map(chart.colour), [0, 1, 2, 3, 4, 5, 6, 7, 7, 7]);
  });
});
