// What the tests beside this file share: where the console's files are, and other time zones.

import { fileURLToPath } from 'node:url';

/** Server/Sources/ReceiptKitServer/Console/Assets/, the files the server embeds and serves. */
export const ASSETS = fileURLToPath(new URL('../../Sources/ReceiptKitServer/Console/Assets/', import.meta.url));

/**
 * Runs a function with the process in each of several time zones (`TZ`, which Node reads again
 * when it is set), and checks that each zone was in force: a zone Node does not know would
 * silently leave UTC and prove nothing.
 * @param {Record<string, number>} zones Each zone's offset from UTC in minutes on 2024-01-01
 *   (`Date#getTimezoneOffset`: positive west of Greenwich).
 * @param {(zone: string) => void} body
 */
export function inEachTimeZone(zones, body) {
  const saved = process.env.TZ;
  try {
    for (const [zone, offset] of Object.entries(zones)) {
      process.env.TZ = zone;
      const inForce = new Date(Date.UTC(2024, 0, 1)).getTimezoneOffset();
      if (inForce !== offset) throw new Error(`TZ=${zone} is not in force: offset ${inForce}, expected ${offset}`);
      body(zone);
    }
  } finally {
    if (saved === undefined) delete process.env.TZ; else process.env.TZ = saved;
  }
}

/** Time zones far apart, with their offsets on 2024-01-01 as {@link inEachTimeZone} takes them. */
export const ZONES = { UTC: 0, 'America/Los_Angeles': 480, 'Asia/Kathmandu': -345, 'Pacific/Kiritimati': -840, 'Pacific/Pago_Pago': 660 };
