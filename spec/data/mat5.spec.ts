import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { parseMat5, readMat5File, type MatValue } from '../../lib/data/mat5.js';
import { fixture } from './fixture-support.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

/** A MatValue as plain JSON (typed arrays to arrays, struct maps to objects) for deep-equal checks. */
function plain(value: MatValue | undefined): unknown {
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => (v instanceof Float64Array ? Array.from(v) : v instanceof Map ? Object.fromEntries(v) : v)),
  );
}

const numeric = (cls: string, dims: number[], data: number[], logical = false): unknown => ({ kind: 'numeric', class: cls, logical, dims, data });
const char = (dims: number[], rows: string[]): unknown => ({ kind: 'char', dims, rows });

describe('MAT v5 reader', () => {
  for (const name of ['types.mat', 'types_compressed.mat']) {
    it(`decodes every supported array kind from scipy.io.savemat output (${name})`, async () => {
      const { header, variables } = await readMat5File(fixture('mat5', name));
      expect(header).to.equal('MATLAB 5.0 MAT-file, Platform: posix, Created on: (fixed for reproducible fixtures)');
      expect([...variables.keys()]).to.deep.equal(['d', 'm2', 'i8', 'u16', 'i64', 'u64', 'f32', 'flags', 's', 'u', 'chars', 'c', 'st', 'e', 'es']);
      const v = (key: string): unknown => plain(variables.get(key));
      expect(v('d')).to.deep.equal(numeric('double', [1, 3], [1.5, -2, 3.25]));
      expect(v('m2')).to.deep.equal(numeric('double', [2, 3], [1, 4, 2, 5, 3, 6]), 'column-major');
      expect(v('i8')).to.deep.equal(numeric('int8', [1, 2], [-5, 7]));
      expect(v('u16')).to.deep.equal(numeric('uint16', [1, 1], [65535]));
      expect(v('i64')).to.deep.equal(numeric('int64', [1, 1], [-(2 ** 40)]));
      expect(v('u64')).to.deep.equal(numeric('uint64', [1, 1], [2 ** 50]));
      expect(v('f32')).to.deep.equal(numeric('single', [1, 1], [0.5]));
      expect(v('flags')).to.deep.equal(numeric('uint8', [1, 2], [1, 0], true));
      expect(v('s')).to.deep.equal(char([1, 5], ['hello']));
      expect(v('u')).to.deep.equal(char([1, 6], ['h\u00e9llo\u2192']));
      expect(v('chars')).to.deep.equal(char([2, 2], ['ab', 'cd']));
      expect(v('c')).to.deep.equal({
        kind: 'cell',
        dims: [1, 3],
        cells: [char([1, 1], ['x']), numeric('double', [1, 2], [1, 2]), { kind: 'cell', dims: [1, 1], cells: [char([1, 4], ['deep'])] }],
      });
      expect(v('st')).to.deep.equal({
        kind: 'struct',
        dims: [2, 1],
        fieldNames: ['a', 'b'],
        elements: [
          { a: numeric('int32', [1, 1], [1]), b: char([1, 5], ['first']) },
          { a: numeric('int32', [1, 1], [2]), b: char([1, 6], ['second']) },
        ],
      });
      expect(v('e')).to.deep.equal(numeric('double', [0, 0], []));
      expect(v('es')).to.deep.equal(char([0, 0], []));
    });
  }

  it('reads big-endian files', async () => {
    const { variables } = await readMat5File(fixture('mat5/bigendian.mat'));
    expect(plain(variables.get('x'))).to.deep.equal(numeric('double', [1, 2], [1, 2.5]));
    expect(plain(variables.get('s'))).to.deep.equal(char([1, 2], ['hi']));
  });

  it('reads the Cars196 fixture struct array like the real cars_annos.mat', async () => {
    const { variables } = await readMat5File(fixture('cars196/mat/cars_annos.mat'));
    const annotations = variables.get('annotations');
    if (annotations?.kind !== 'struct') throw new Error('annotations is not a struct');
    expect(annotations.dims).to.deep.equal([1, 8]);
    expect(annotations.fieldNames).to.deep.equal(['relative_im_path', 'bbox_x1', 'bbox_y1', 'bbox_x2', 'bbox_y2', 'class', 'test']);
    expect(plain(annotations.elements[6]?.get('relative_im_path'))).to.deep.equal(char([1, 18], ['car_ims/000007.jpg']));
    expect(plain(annotations.elements[6]?.get('bbox_x2'))).to.deep.equal(numeric('uint16', [1, 1], [306]));
    expect(plain(annotations.elements[6]?.get('class'))).to.deep.equal(numeric('uint8', [1, 1], [196]));
    const classNames = variables.get('class_names');
    expect(classNames?.kind === 'cell' && classNames.cells.length).to.equal(196);
  });

  it('rejects complex and sparse arrays and MAT 7.3 files, naming file and variable', async () => {
    const complex = fixture('mat5/complex.mat');
    await expectDmlError(readMat5File(complex), 'E_DATASET', `MAT-file ${complex}: variable z: is a complex array; only real arrays are supported`);
    const nested = fixture('mat5/complex_field.mat');
    await expectDmlError(readMat5File(nested), 'E_DATASET', `MAT-file ${nested}: variable s(1).z: is a complex array; only real arrays are supported`);
    const sparse = fixture('mat5/sparse.mat');
    await expectDmlError(
      readMat5File(sparse),
      'E_DATASET',
      `MAT-file ${sparse}: variable sp: is a sparse array; only numeric, char, cell and struct arrays are supported`,
    );
    const v73 = fixture('mat5/v73.mat');
    await expectDmlError(
      readMat5File(v73),
      'E_DATASET',
      `MAT-file ${v73}: is a MAT 7.3 (HDF5) file, which is not supported; resave it with \`save(file, "-v7")\` or convert it to CSV`,
    );
  });

  it('rejects truncated files, plain and compressed', async () => {
    const plainBytes = readFileSync(fixture('mat5/types.mat'));
    await expectDmlError(
      () => parseMat5(plainBytes.subarray(0, 150), 'cut.mat'),
      'E_DATASET',
      /^MAT-file cut\.mat: data element at file byte 128 claims \d+ bytes but only 14 remain \(truncated file\?\)$/,
    );
    await expectDmlError(() => parseMat5(plainBytes.subarray(0, 132), 'cut.mat'), 'E_DATASET', 'MAT-file cut.mat: data element tag at file byte 128 is truncated (4 bytes left)');
    const compressed = readFileSync(fixture('mat5/types_compressed.mat'));
    const first = compressed.readUInt32LE(132);
    await expectDmlError(
      () => parseMat5(Buffer.concat([compressed.subarray(0, 136), compressed.subarray(136, 136 + Math.floor(first / 2))]), 'cut.mat'),
      'E_DATASET',
      /^MAT-file cut\.mat: data element at file byte 128 claims \d+ bytes/,
    );
    const corrupt = Buffer.from(compressed);
    corrupt.fill(0xff, 138, 150);
    await expectDmlError(() => parseMat5(corrupt, 'bad.mat'), 'E_DATASET', /^MAT-file bad\.mat: compressed variable 1 is not a valid zlib stream: /);
  });

  it('rejects files that are not MAT v5 and a missing file', async () => {
    await expectDmlError(
      () => parseMat5(Buffer.from('hello'), 'x.mat'),
      'E_DATASET',
      'MAT-file x.mat: does not start with a MAT v5 header ("MATLAB 5.0 MAT-file ..."); MAT 4 and other formats are not supported',
    );
    const badIndicator = Buffer.from(readFileSync(fixture('mat5/types.mat')));
    badIndicator.write('XX', 126, 'latin1');
    await expectDmlError(() => parseMat5(badIndicator, 'x.mat'), 'E_DATASET', 'MAT-file x.mat: has endian indicator "XX"; expected "IM" or "MI"');
    const missing = fixture('mat5/missing.mat');
    await expectDmlError(readMat5File(missing), 'E_NOT_FOUND', `Cannot read MAT-file ${missing}: it does not exist`);
  });
});
