import { expect } from 'chai';
import { applyClassSplit, parseClassList, selectLabels } from '../../lib/data/class-split.js';
import { readIdxDataset } from '../../lib/data/layouts/idx.js';
import type { Manifest } from '../../lib/data/manifest.js';
import { fixture, itemRows } from './fixture-support.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

/** A manifest with one item per label, all test, query and gallery. */
function manifestWithLabels(labels: string[]): Manifest {
  return {
    layout: 'csv',
    root: '/data/m.csv',
    protocol: 'CSV manifest m.csv',
    defaultK: [1, 2],
    items: labels.map((label, i) => ({ id: `i${i}`, source: { kind: 'file', path: `/data/${i}.png` }, label, split: 'test', isQuery: true, isGallery: true })),
  };
}

describe('class-disjoint split', () => {
  it('parses comma-separated terms, trimming spaces, and rejects empty terms', async () => {
    expect(parseClassList('0-4')).to.deep.equal(['0-4']);
    expect(parseClassList(' 0, 1 ,cat ')).to.deep.equal(['0', '1', 'cat']);
    await expectDmlError(() => parseClassList('0,,1', '--train-classes'), 'E_ARG', 'Expected comma-separated labels or ranges such as "0-4" or "0,1,2" for --train-classes but received "0,,1"');
    await expectDmlError(() => parseClassList(''), 'E_ARG', 'Expected comma-separated labels or ranges such as "0-4" or "0,1,2" for trainClasses but received ""');
  });

  it('selects labels by name and by integer range; an exact label name wins over a range', () => {
    const labels = new Set(['0', '1', '2', '007', '10', 'cat', '2-3']);
    expect([...selectLabels(['0-2'], labels)].sort()).to.deep.equal(['0', '1', '2']);
    expect([...selectLabels(['5-9', 'cat'], labels)].sort()).to.deep.equal(['007', 'cat']);
    expect([...selectLabels(['2-3'], labels)]).to.deep.equal(['2-3']);
  });

  it('rejects terms that match no label, reversed ranges and splits that leave no test class', async () => {
    const labels = new Set(['0', '1', '2']);
    await expectDmlError(() => selectLabels(['dog'], labels), 'E_ARG', 'Expected labels of the dataset (e.g. "0", "1", "2") or ranges such as "0-4" for trainClasses but received "dog"');
    await expectDmlError(() => selectLabels(['5-9'], labels), 'E_ARG', 'Expected a range that matches at least one integer label of the dataset for trainClasses but received "5-9"');
    await expectDmlError(() => selectLabels(['4-1'], labels), 'E_ARG', 'Expected a range <from>-<to> with from <= to for trainClasses but received "4-1"');
    await expectDmlError(
      () => applyClassSplit(manifestWithLabels(['0', '1', '2']), ['0-2']),
      'E_ARG',
      'Expected a subset of the 3 labels that leaves some for testing for trainClasses but received "0-2"',
    );
  });

  it('gives IDX "classes 0-4 train, 5-9 test", replacing the files\' split', async () => {
    const manifest = applyClassSplit(await readIdxDataset(fixture('idx'), 'idx'), parseClassList('0-4'));
    expect(itemRows(manifest.items)).to.deep.equal([
      ['train/0', '0', 'train', false, false],
      ['train/1', '1', 'train', false, false],
      ['train/2', '2', 'train', false, false],
      ['train/3', '5', 'test', true, true],
      ['train/4', '6', 'test', true, true],
      ['train/5', '9', 'test', true, true],
      ['test/0', '0', 'train', false, false],
      ['test/1', '3', 'train', false, false],
      ['test/2', '5', 'test', true, true],
      ['test/3', '9', 'test', true, true],
    ]);
    expect(manifest.protocol).to.equal(
      'IDX: train files train, t10k files test; query set = gallery set = test images; ' +
        'replaced by a class-disjoint split: 4 train classes (0-4), 3 test classes, query set = gallery set',
    );
    expect(manifest.items[3]?.source).to.deep.equal({ kind: 'idx', file: fixture('idx/train-images-idx3-ubyte.gz'), index: 3 });
  });

  it('leaves the input manifest unchanged', () => {
    const input = manifestWithLabels(['a', 'b']);
    const output = applyClassSplit(input, ['a']);
    expect(itemRows(input.items)).to.deep.equal([['i0', 'a', 'test', true, true], ['i1', 'b', 'test', true, true]]);
    expect(itemRows(output.items)).to.deep.equal([['i0', 'a', 'train', false, false], ['i1', 'b', 'test', true, true]]);
  });
});
