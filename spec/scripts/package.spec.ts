/**
 * @file The install path a user reads and gets: package.json's metadata (keywords, the CHANGELOG
 * shipped, the train and export entries mapped to their typings and to the entries that explain a
 * missing TensorFlow.js), and the README's install block showing only installs that work while dmlkit
 * is not on the registry (a packed tarball, git+); the sizes check-package.sh measures are in docs/benchmarks.md, written by
 * scripts/tools/update-doc-numbers.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  keywords?: string[];
  files: string[];
  exports: Record<string, string | { types: string; default: string }>;
};
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

describe('package metadata and the README install path', () => {
  it('package.json has keywords and ships the CHANGELOG; train and export map typings and explaining entries', () => {
    expect(pkg.keywords).to.include.members(['metric-learning', 'embeddings', 'onnx', 'image-retrieval']);
    expect(pkg.files).to.include('CHANGELOG.md');
    expect(readFileSync(path.join(root, 'CHANGELOG.md'), 'utf8')).to.match(/^# Changelog\n[\s\S]*\n## \[Unreleased\]\n[\s\S]*\n## \[0\.1\.0\] - \d{4}-\d\d-\d\d\n/);
    for (const entry of ['train', 'export']) {
      expect(pkg.exports[`./${entry}`]).to.deep.equal({ types: `./dist/lib/${entry}.d.ts`, default: `./dist/lib/${entry}-entry.js` });
      expect(existsSync(path.join(root, `lib/${entry}-entry.ts`)), entry).to.equal(true);
    }
  });

  it('the README installs only what works: a packed tarball or git+, never the unpublished `npm install dmlkit`', () => {
    const section = readme.slice(readme.indexOf('## Installing dmlkit in your project'), readme.indexOf('### Library'));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const commands = block.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
    expect(commands.some((l) => /npm install dmlkit(\s|$)/.test(l)), 'npm install dmlkit is E404').to.equal(false);
    expect(commands.some((l) => /npm pack\)/.test(l))).to.equal(true);
    expect(commands.some((l) => /ONNXRUNTIME_NODE_INSTALL=skip npm install \.\/dmlkit\/dmlkit-\d+\.\d+\.\d+\.tgz/.test(l))).to.equal(true);
    expect(commands.some((l) => /ONNXRUNTIME_NODE_INSTALL=skip npm install "git\+/.test(l))).to.equal(true);
    expect(section).to.include('`npm install dmlkit` answers E404');
    // The sizes are not typed into the README: docs/benchmarks.md's block is written from check-package.sh's last line
    // ("package check passed: 724 kB packed (424 files), installed in 82 s, ...") by scripts/tools/update-doc-numbers.ts.
    expect(section).to.not.match(/\d+ kB/);
    expect(section).to.include('docs/benchmarks.md#the-package-and-its-install');
    const generated = /<!-- generated: package [^>]*-->\n([\s\S]*?)<!-- \/generated: package -->/.exec(readFileSync(path.join(root, 'docs/benchmarks.md'), 'utf8'))?.[1] ?? '';
    expect(generated).to.match(/^Measured \d{4}-\d\d-\d\d \(`npx tsx scripts\/tools\/update-doc-numbers\.ts package`.*the tarball is [\d,]+ kB \([\d,]+ files\)/);
    expect(readFileSync(path.join(root, 'scripts/tools/check-package.sh'), 'utf8')).to.include('kB packed ($(tar -tzf');
  });
});
