import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { readIdxDataset } from '../../../lib/data/layouts/idx.js';
import { fixture, itemRows, useScratchFolder } from '../fixture-support.js';
import { expectDmlError } from '../../helpers/expect-dml-error.js';

/** An IDX label file (uint8, rank 1) holding `labels`. */
function labelFile(labels: number[]): Buffer {
  const header = Buffer.from([0, 0, 0x08, 1, 0, 0, 0, 0]);
  header.writeUInt32BE(labels.length, 4);
  return Buffer.concat([header, Buffer.from(labels)]);
}

describe('IDX (MNIST) layout', () => {
  const scratch = useScratchFolder();

  it('reads gz and raw files: train then t10k, test items query and gallery, idx sources', async () => {
    const dir = fixture('idx');
    const manifest = await readIdxDataset(dir, 'mnist');
    expect(manifest.layout).to.equal('mnist');
    expect(manifest.protocol).to.equal('MNIST: train files train, t10k files test; query set = gallery set = test images');
    expect(itemRows(manifest.items)).to.deep.equal([
      ['train/0', '0', 'train', false, false],
      ['train/1', '1', 'train', false, false],
      ['train/2', '2', 'train', false, false],
      ['train/3', '5', 'train', false, false],
      ['train/4', '6', 'train', false, false],
      ['train/5', '9', 'train', false, false],
      ['test/0', '0', 'test', true, true],
      ['test/1', '3', 'test', true, true],
      ['test/2', '5', 'test', true, true],
      ['test/3', '9', 'test', true, true],
    ]);
    expect(manifest.items[5]?.source).to.deep.equal({ kind: 'idx', file: `${dir}/train-images-idx3-ubyte.gz`, index: 5 });
    expect(manifest.items[6]?.source).to.deep.equal({ kind: 'idx', file: `${dir}/t10k-images-idx3-ubyte`, index: 0 });
  });

  it('accepts the dotted file names of some mirrors', async () => {
    const dir = scratch.copyFixture('idx');
    renameSync(`${dir}/t10k-images-idx3-ubyte`, `${dir}/t10k-images.idx3-ubyte`);
    const manifest = await readIdxDataset(dir, 'fashion-mnist');
    expect(manifest.items[6]?.source).to.deep.equal({ kind: 'idx', file: `${dir}/t10k-images.idx3-ubyte`, index: 0 });
  });

  it('rejects an image/label count mismatch, naming both files and counts', async () => {
    const dir = scratch.copyFixture('idx');
    writeFileSync(`${dir}/t10k-labels-idx1-ubyte`, labelFile([0, 3, 5]));
    await expectDmlError(
      readIdxDataset(dir, 'idx'),
      'E_DATASET',
      `IDX image file ${dir}/t10k-images-idx3-ubyte holds 4 images but label file ${dir}/t10k-labels-idx1-ubyte holds 3 labels`,
    );
  });

  it('rejects a truncated IDX file', async () => {
    const dir = scratch.copyFixture('idx');
    const raw = gunzipSync(readFileSync(`${dir}/train-images-idx3-ubyte.gz`));
    rmSync(`${dir}/train-images-idx3-ubyte.gz`);
    writeFileSync(`${dir}/train-images-idx3-ubyte`, raw.subarray(0, raw.length - 5));
    await expectDmlError(
      readIdxDataset(dir, 'idx'),
      'E_DATASET',
      `IDX file ${dir}/train-images-idx3-ubyte holds 19 data bytes; its header (dims 6x2x2) says 24`,
    );
  });

  it('rejects a missing file, naming the spellings looked for', async () => {
    const dir = scratch.copyFixture('idx');
    rmSync(`${dir}/train-labels-idx1-ubyte.gz`);
    await expectDmlError(
      readIdxDataset(dir, 'idx'),
      'E_NOT_FOUND',
      `IDX folder ${dir} has no train-labels-idx1-ubyte (looked for train-labels-idx1-ubyte, train-labels-idx1-ubyte.gz, train-labels.idx1-ubyte, train-labels.idx1-ubyte.gz)`,
    );
  });

  it('rejects an image file of the wrong rank', async () => {
    const dir = scratch.copyFixture('idx');
    writeFileSync(`${dir}/t10k-images-idx3-ubyte`, labelFile([1, 2, 3, 4]));
    await expectDmlError(readIdxDataset(dir, 'idx'), 'E_DATASET', `IDX image file ${dir}/t10k-images-idx3-ubyte has dimensions 4; expected count x rows x cols`);
  });
});
