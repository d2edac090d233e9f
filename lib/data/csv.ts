/**
 * @file A strict RFC 4180 CSV parser for dataset manifests and converted annotation files.
 *
 * Accepted: comma-separated fields; fields in double quotes may hold commas, line breaks and doubled
 * quotes (`"say ""hi"", then go"`); records end with LF, CRLF or CR; a leading UTF-8 byte order mark
 * is dropped; blank lines are skipped. Values are kept exactly (no trimming). Rejected, with
 * `<file>:<line>:<column>` in the message: a quote inside an unquoted field, text after a closing
 * quote, and a quoted field that is never closed.
 *
 * ```csv
 * path,label,split
 * "images/a, b.png",cat,test
 * ```
 */
import { DmlError } from '../errors.js';

/** One CSV record and the 1-based line it starts on (quoted fields can span lines). */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/** Parses CSV text; `file` names the source in error messages. */
export function parseCsv(text: string, file: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const length = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  let lineStart = i;
  const fail = (at: number, message: string): DmlError =>
    new DmlError('E_DATASET', `${file}:${line}:${at - lineStart + 1}: ${message}`);

  while (i < length) {
    const recordLine = line;
    const fields: string[] = [];
    for (;;) {
      if (text[i] === '"') {
        const openLine = line;
        const openColumn = i - lineStart + 1;
        let value = '';
        i++;
        for (;;) {
          const close = text.indexOf('"', i);
          if (close < 0) {
            throw new DmlError('E_DATASET', `${file}:${openLine}:${openColumn}: quoted field is never closed`);
          }
          for (let k = i; k < close; k++) {
            const c = text[k];
            if (c === '\n' || (c === '\r' && text[k + 1] !== '\n')) {
              line++;
              lineStart = k + 1;
            }
          }
          value += text.slice(i, close);
          if (text[close + 1] === '"') {
            value += '"';
            i = close + 2;
          } else {
            i = close + 1;
            break;
          }
        }
        const next = text[i];
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
          throw fail(i, `unexpected ${JSON.stringify(next)} after a closing quote; expected a comma or the end of the line`);
        }
        fields.push(value);
      } else {
        let end = i;
        for (; end < length; end++) {
          const c = text[end];
          if (c === ',' || c === '\n' || c === '\r') break;
          if (c === '"') throw fail(end, 'quote inside an unquoted field; quote the whole field and double the inner quotes');
        }
        fields.push(text.slice(i, end));
        i = end;
      }
      if (text[i] !== ',') break;
      i++;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    line++;
    lineStart = i;
    const blank = fields.length === 1 && fields[0] === '';
    if (!blank) records.push({ line: recordLine, fields });
  }
  return records;
}
