import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIconDataset, iconClasses } from '../../../scripts/tools/icon-dataset.js';

/** scripts/tools/icon-dataset.ts on a small fake theme: classes, sizes, order, layout, refusals. */
describe('scripts/tools/icon-dataset', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'dml-icons-'));
    // theme "t": icon actions/a at 4 sizes, actions/b at 2, apps/c at 3 (plus a scalable SVG folder)
    const icons: Array<[string, string, string]> = [
      ['16x16', 'actions', 'a'], ['22x22', 'actions', 'a'], ['32x32', 'actions', 'a'], ['128x128', 'actions', 'a'],
      ['16x16', 'actions', 'b'], ['32x32', 'actions', 'b'],
      ['16x16', 'apps', 'c'], ['22x22', 'apps', 'c'], ['128x128', 'apps', 'c'],
    ];
    for (const [size, category, name] of icons) {
      mkdirSync(path.join(root, 't', size, category), { recursive: true });
      writeFileSync(path.join(root, 't', size, category, `${name}.png`), `${size}/${category}/${name}`);
    }
    mkdirSync(path.join(root, 't', 'scalable', 'actions'), { recursive: true });
    writeFileSync(path.join(root, 't', 'scalable', 'actions', 'a.svg'), '<svg/>');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('makes one class per icon with enough sizes, sizes in ascending order', () => {
    const classes = iconClasses([path.join(root, 't')], 3);
    expect(classes.map((c) => `${c.category}/${c.name}`)).to.deep.equal(['actions/a', 'apps/c']);
    expect(classes[0]?.images.map(([s]) => s)).to.deep.equal(['16x16', '22x22', '32x32', '128x128']);
    expect(iconClasses([path.join(root, 't')], 2)).to.have.length(3);
  });

  it('writes numbered class folders of links and <out>.classes.tsv, in a seeded order, and refuses an existing folder', () => {
    const out = path.join(root, 'data');
    const classes = buildIconDataset({ themes: [path.join(root, 't')], out, minImages: 2, seed: 0 });
    expect(readdirSync(out).sort()).to.deep.equal(['0', '1', '2']);
    const rows = readFileSync(`${out}.classes.tsv`, 'utf8').trim().split('\n');
    expect(rows[0]).to.equal('class\ttheme\tcategory\tname\tsizes');
    classes.forEach((c, i) => {
      expect(rows[i + 1]).to.equal(`${i}\tt\t${c.category}\t${c.name}\t${c.images.map(([s]) => s).join(',')}`);
      expect(readdirSync(path.join(out, String(i))).sort()).to.deep.equal(c.images.map(([s]) => `${s}.png`).sort());
      const [size, file] = c.images[0] as [string, string];
      expect(readlinkSync(path.join(out, String(i), `${size}.png`))).to.equal(file);
    });
    const again = buildIconDataset({ themes: [path.join(root, 't')], out: path.join(root, 'data2'), minImages: 2, seed: 0 });
    expect(again.map((c) => c.name)).to.deep.equal(classes.map((c) => c.name));
    expect(() => buildIconDataset({ themes: [path.join(root, 't')], out, minImages: 2, seed: 0 })).to.throw(`--out: ${out} exists`);
    expect(() => buildIconDataset({ themes: [path.join(root, 'missing')], out: path.join(root, 'data3'), minImages: 2, seed: 0 })).to.throw('is not a folder');
    expect(existsSync(path.join(root, 'data3'))).to.equal(false);
    expect(readdirSync(root).filter((f) => f.includes('partial'))).to.deep.equal([]);
  });
});
