// After `npx typedoc`: the reference has what its configuration promises, or the docs build fails:
// the landing page is the README's Library section, the dmlkit entry point is grouped by area, and
// "Defined in" links resolve to files of this checkout.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const api = fileURLToPath(new URL('../../docs/api/', import.meta.url));
const failures = [];
const landing = readFileSync(path.join(api, 'index.html'), 'utf8');
if (!landing.includes('evaluateArrays') || !landing.includes('Library')) failures.push('index.html is not the README\'s Library section');
const index = readFileSync(path.join(api, 'modules', 'dmlkit.html'), 'utf8');
const headings = [...index.matchAll(/<h2[^>]*>(?:<[^>]*>)*([^<]+)/g)].map((m) => m[1]);
for (const area of ['Evaluate', 'Embed', 'Search', 'Data', 'Metrics', 'Reports']) {
  if (!headings.includes(area)) failures.push(`modules/dmlkit.html has no "${area}" group (groups: ${headings.join(', ')})`);
}
let links = 0;
for (const kind of ['functions', 'classes', 'interfaces']) {
  for (const page of readdirSync(path.join(api, kind))) {
    for (const [, href] of readFileSync(path.join(api, kind, page), 'utf8').matchAll(/Defined in <a href="([^"#]+)/g)) {
      links++;
      if (!existsSync(path.resolve(api, kind, href))) failures.push(`${kind}/${page}: "Defined in" links to ${href}, which does not exist`);
    }
  }
}
if (links === 0) failures.push('no "Defined in" links at all');
if (failures.length > 0) {
  for (const f of failures.slice(0, 10)) console.error(`docs check: ${f}`);
  process.exit(1);
}
console.log(`docs check: landing page, ${headings.length} groups, ${links} source links resolve`);
