// The API reference's landing page: the README's "Library" section (the example that
// spec/readme-library.spec.ts runs), written at build time to landing.md (not committed), so the two
// never drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Writes landing.md beside this file from ../../README.md and returns its path. */
export function writeLanding() {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('### Library\n');
  const end = readme.indexOf('\n## ', start);
  if (start < 0 || end < 0) throw new Error('README.md has no "### Library" section followed by a "## " heading');
  const section = readme.slice(start + '### Library\n'.length, end).trim();
  const text = [
    '# dmlkit',
    '',
    'Deep metric learning in TypeScript: evaluate, embed, search, train, export and serve image embedders. Entry points: `dmlkit`, `dmlkit/train`, `dmlkit/export`, `dmlkit/serve`; declarations are grouped by area (Evaluate, Embed, Search, Data, Metrics, Reports, Train, Export, Serve). The declaring file of each is named under "Defined in".',
    '',
    '## Library',
    '',
    section,
    '',
  ].join('\n');
  const file = fileURLToPath(new URL('landing.md', import.meta.url));
  writeFileSync(file, text);
  return file;
}
