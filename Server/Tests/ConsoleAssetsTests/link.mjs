// Links the console's modules from an entry without running any of them (none could run in
// Node: they build the page): each file parses as an ES module, each import names a sibling
// file that exists and an export it has. Prints the files linked, as JSON, to standard output.
// Run by modules.test.mjs as `node --experimental-vm-modules link.mjs ENTRY`, the flag that
// gives node:vm its SourceTextModule.
//
// The console's modules import only their siblings, by `./NAME.mjs`: the server serves them
// flat under /console/ and nothing from another origin.

import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import vm from 'node:vm';

const modules = new Map();

async function load(path) {
  if (!modules.has(path)) {
    modules.set(path, (async () => new vm.SourceTextModule(await readFile(path, 'utf8'), { identifier: path }))());
  }
  return modules.get(path);
}

const entry = process.argv[2];
const root = await load(entry);
await root.link(async (specifier, referencing) => {
  if (!/^\.\/[a-z][a-z0-9-]*\.mjs$/.test(specifier)) {
    throw new Error(`${basename(referencing.identifier)} imports ${specifier}: a console module imports only ./NAME.mjs`);
  }
  return load(join(dirname(referencing.identifier), specifier));
});
process.stdout.write(JSON.stringify([...modules.keys()].map((path) => basename(path)).sort()));
