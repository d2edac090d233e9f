import { expect } from 'chai';
import { parseCsv } from '../../lib/data/csv.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

describe('parseCsv', () => {
  it('parses quoted fields with commas, doubled quotes and line breaks, keeping start line numbers', () => {
    const text = 'a,b,c\n"x, y","say ""hi""",\n"two\nlines",2,3\n';
    expect(parseCsv(text, 'f.csv')).to.deep.equal([
      { line: 1, fields: ['a', 'b', 'c'] },
      { line: 2, fields: ['x, y', 'say "hi"', ''] },
      { line: 3, fields: ['two\nlines', '2', '3'] },
    ]);
  });

  it('drops a byte order mark, accepts CRLF and CR line ends, skips blank lines, keeps spaces', () => {
    expect(parseCsv('\ufeffa,b\r\n\r\n 1 ,2\r3,4', 'f.csv')).to.deep.equal([
      { line: 1, fields: ['a', 'b'] },
      { line: 3, fields: [' 1 ', '2'] },
      { line: 4, fields: ['3', '4'] },
    ]);
    expect(parseCsv('', 'f.csv')).to.deep.equal([]);
  });

  it('counts lines inside quoted fields for later records', () => {
    const records = parseCsv('h\n"a\r\nb"\nc\n', 'f.csv');
    expect(records.map((r) => r.line)).to.deep.equal([1, 2, 4]);
  });

  it('rejects malformed quoting with file, line and column', async () => {
    await expectDmlError(() => parseCsv('a,b\nx,y"z\n', 'm.csv'), 'E_DATASET', 'm.csv:2:4: quote inside an unquoted field; quote the whole field and double the inner quotes');
    await expectDmlError(() => parseCsv('a,b\n"x"y,z\n', 'm.csv'), 'E_DATASET', 'm.csv:2:4: unexpected "y" after a closing quote; expected a comma or the end of the line');
    await expectDmlError(() => parseCsv('a,b\n1,2\n3,"open\n', 'm.csv'), 'E_DATASET', 'm.csv:3:3: quoted field is never closed');
  });
});
