import { writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { readCsvManifest, readJsonlManifest } from '../../../lib/data/layouts/manifest-file.js';
import { collectingOptions, fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

describe('CSV and JSONL manifest layouts', () => {
  const scratch = useScratchFolder();

  /** Writes `text` to a scratch manifest file and returns its path. */
  function manifestFile(name: string, text: string): string {
    const file = scratch.path(name);
    writeFileSync(file, text);
    return file;
  }

  it('reads a CSV manifest: BOM, CRLF, quoted paths, booleans in every spelling, ids defaulting to the path', async () => {
    const options = collectingOptions();
    const file = fixture('csv/manifest.csv');
    const manifest = await readCsvManifest(file, options);
    expect(manifest.layout).to.equal('csv');
    expect(manifest.root).to.equal(file);
    expect(itemRows(manifest.items)).to.deep.equal([
      ['images/cat/1.png', 'cat', 'train', false, false],
      ['cat-2', 'cat', 'test', true, true],
      ['images/dog, big/3.png', 'dog', 'test', true, false],
      ['dog-4', 'dog', 'test', false, true],
    ]);
    expect(manifest.items[2]?.source).to.deep.equal({ kind: 'file', path: fixture('csv/images/dog, big/3.png') });
    expect(manifest.protocol).to.equal('CSV manifest manifest.csv: 2 queries, 2 gallery items');
    expect(options.warnings).to.deep.equal([`CSV manifest ${file}: ignored columns "note"`]);
  });

  it('defaults split to test and makes non-train items query and gallery when the role columns are absent', async () => {
    const manifest = await readCsvManifest(fixture('csv/minimal.csv'), collectingOptions());
    expect(itemRows(manifest.items)).to.deep.equal([
      ['images/cat/1.png', 'cat', 'test', true, true],
      ['images/cat/2.png', 'cat', 'test', true, true],
    ]);
    expect(manifest.protocol).to.equal('CSV manifest minimal.csv: 2 queries, 2 gallery items (query set = gallery set)');
  });

  it('reads a JSONL manifest: numeric labels, JSON booleans and 0/1, null as absent, blank lines skipped', async () => {
    const options = collectingOptions();
    const file = fixture('csv/manifest.jsonl');
    const manifest = await readJsonlManifest(file, options);
    expect(manifest.layout).to.equal('jsonl');
    expect(itemRows(manifest.items)).to.deep.equal([
      ['images/cat/1.png', 'cat', 'train', false, false],
      ['cat-2', 'cat', 'test', true, true],
      ['images/dog, big/3.png', '7', 'test', true, false],
      ['images/dog, big/4.png', '7', 'test', false, true],
    ]);
    expect(options.warnings).to.deep.equal([`JSONL manifest ${file}: ignored keys "extra"`]);
  });

  it('resolves paths against the manifest folder and keeps absolute paths', async () => {
    const file = manifestFile('m.csv', 'path,label\nsub/a.png,x\n/abs/b.png,x\n');
    const manifest = await readCsvManifest(file, collectingOptions());
    expect(manifest.items.map((i) => i.source)).to.deep.equal([
      { kind: 'file', path: scratch.path('sub/a.png') },
      { kind: 'file', path: '/abs/b.png' },
    ]);
  });

  it('names the file, line and column of a bad value', async () => {
    const file = manifestFile('m.csv', 'path,label,is_query,is_gallery\na.png,x,true,true\nb.png,x,yes,true\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:3: column "is_query": expected true, false, 1 or 0 but found "yes"`);
  });

  it('rejects a line with the wrong number of fields, with its line number', async () => {
    const file = manifestFile('m.csv', 'path,label,split\na.png,x,test\n"b,png",x\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:3: has 2 fields; the header has 3 (path,label,split)`);
  });

  it('rejects CSV syntax errors with line and column', async () => {
    const file = manifestFile('m.csv', 'path,label\na.png,x\nb.png,"x"y\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:3:10: unexpected "y" after a closing quote; expected a comma or the end of the line`);
  });

  it('requires a header with path and label, without duplicate columns', async () => {
    let file = manifestFile('a.csv', 'file,label\na.png,x\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:1: header has no "path" column (found "file", "label"); required: path, label`);
    file = manifestFile('b.csv', 'path,label,Label\na.png,x,y\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:1: column "label" appears twice in the header`);
    file = manifestFile('c.csv', '');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `CSV manifest ${file} is empty; expected a header line such as "path,label,split"`);
    file = manifestFile('d.csv', 'path,label\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_EMPTY', `Manifest ${file} lists no images`);
  });

  it('rejects duplicate ids, naming both lines', async () => {
    const file = manifestFile('m.csv', 'path,label,id\na.png,x,one\nb.png,x,two\nc.png,y,one\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:4: column "id": id "one" is already used on line 2`);
  });

  it('requires is_query and is_gallery together, and a non-empty label', async () => {
    let file = manifestFile('m.jsonl', '{"path": "a.png", "label": "x", "is_query": true}\n');
    await expectDmlError(
      readJsonlManifest(file, collectingOptions()),
      'E_DATASET',
      `${file}:1: columns "is_query" and "is_gallery" must both be given or both be left empty; found only "is_query"`,
    );
    file = manifestFile('n.csv', 'path,label\na.png,\n');
    await expectDmlError(readCsvManifest(file, collectingOptions()), 'E_DATASET', `${file}:2: column "label": expected a non-empty string but found ""`);
  });

  it('rejects JSONL lines that are not JSON objects, with line numbers', async () => {
    let file = manifestFile('m.jsonl', '{"path": "a.png", "label": "x"}\n\n{"path": "b.png", "label": }\n');
    await expectDmlError(readJsonlManifest(file, collectingOptions()), 'E_DATASET', new RegExp(`^${file}:3: not valid JSON: `));
    file = manifestFile('n.jsonl', '["a.png", "x"]\n');
    await expectDmlError(
      readJsonlManifest(file, collectingOptions()),
      'E_DATASET',
      `${file}:1: expected a JSON object such as {"path": "a.jpg", "label": "cat"} but found an array`,
    );
    file = manifestFile('o.jsonl', '{"label": "x"}\n');
    await expectDmlError(readJsonlManifest(file, collectingOptions()), 'E_DATASET', `${file}:1: column "path": expected a non-empty string but found nothing`);
  });
});
