// The console's files as a whole: every module links from the entry, every module is used, and
// the page loads its script as a module and names only files that are there.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ASSETS } from './support.mjs';

const modules = readdirSync(ASSETS).filter((name) => name.endsWith('.mjs')).sort();
const linker = fileURLToPath(new URL('./link.mjs', import.meta.url));

function link(entry) {
  return spawnSync(process.execPath, ['--experimental-vm-modules', linker, entry], { encoding: 'utf8' });
}

test('every module links from console.mjs: imports of files and exports that exist, and no module left out', () => {
  const run = link(join(ASSETS, 'console.mjs'));
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), modules, 'a module in Assets/ that console.mjs does not reach is not used');
});

test('the linker fails on an import of an export that is not there, naming it', (t) => {
  // Made in a temporary folder, so that what is checked above is not touched.
  const folder = mkdtempSync(join(tmpdir(), 'console-link-'));
  t.after(() => rmSync(folder, { recursive: true }));
  writeFileSync(join(folder, 'b.mjs'), 'export const a = 1;\n');
  writeFileSync(join(folder, 'a.mjs'), "import { a, missing } from './b.mjs';\n");
  const run = link(join(folder, 'a.mjs'));
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /does not provide an export named 'missing'/);
});

test('the page loads its one script as a module and names only files that are in Assets/', () => {
  const page = readFileSync(join(ASSETS, 'console.html'), 'utf8');
  assert.deepEqual([...page.matchAll(/<script\b[^>]*>/g)].map((match) => match[0]), ['<script type="module" src="/console/console.mjs">']);
  const named = [...page.matchAll(/(?:src|href)="\/console\/([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(named.sort(), ['console.css', 'console.mjs', 'icon.svg']);
  const files = readdirSync(ASSETS);
  for (const name of named) assert.ok(files.includes(name), name);
});
