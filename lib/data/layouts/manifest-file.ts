/**
 * @file CSV and JSONL manifest layouts (`csv:<file>`, `jsonl:<file>`): one line per image, for any
 * dataset that fits no other layout.
 *
 * ```csv
 * path,label,split,is_query,is_gallery,id
 * images/cat/001.jpg,cat,train,false,false,
 * "images/dog, big/002.jpg",dog,test,1,1,dog-002
 * ```
 * ```jsonl
 * {"path": "images/cat/001.jpg", "label": "cat", "split": "train"}
 * {"path": "images/dog/002.jpg", "label": 7, "is_query": true, "is_gallery": false}
 * ```
 *
 * Columns (CSV header names are case-insensitive; JSONL keys are exact):
 * - `path` (required): image file, relative to the manifest's folder (absolute paths are kept).
 * - `label` (required): class label; JSONL also accepts a number (`7` becomes `"7"`).
 * - `split` (optional, default `test`): free-form split name; the trainer uses `train`.
 * - `is_query`, `is_gallery` (optional, both or neither on a line): `true`/`false`/`1`/`0`
 *   (case-insensitive; JSONL also takes JSON booleans and the numbers 0/1). Without them an item is
 *   query and gallery unless its split is `train`, which gets no evaluation role.
 * - `id` (optional, default the `path` value as written): unique item id.
 * An empty CSV cell or a JSONL `null` counts as an absent optional value. Other columns are ignored
 * with one warning (to catch typos such as `is_qeury`).
 *
 * CSV parsing follows RFC 4180 (see `lib/data/csv.ts`): header line required, quoted fields, commas
 * and doubled quotes inside quotes, CRLF, a leading byte order mark. Every error names the file, the
 * line and the column: `manifest.csv:7: column "is_query": expected true, false, 1 or 0 but found "yes"`.
 * Image files are not opened here; a missing image shows up when the manifest is hashed or decoded.
 */
import { basename, dirname, resolve } from 'node:path';
import { DmlError } from '../../errors.js';
import { parseCsv } from '../csv.js';
import { lineError, readTextFile, summarizeNames, type LayoutReadOptions } from '../layout-support.js';
import type { Manifest, ManifestItem } from '../manifest.js';

const COLUMNS = ['path', 'label', 'split', 'is_query', 'is_gallery', 'id'] as const;
type Column = (typeof COLUMNS)[number];

/** One manifest line: the values of the known columns as found (CSV strings or JSON values). */
interface ManifestLine {
  line: number;
  values: Partial<Record<Column, unknown>>;
}

/** True for an absent optional value: missing, `null`, or an empty CSV cell. */
const isAbsent = (value: unknown): boolean => value === undefined || value === null || value === '';

function parseFlag(value: unknown, file: string, line: number, column: Column): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  const text = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw lineError(file, line, `column "${column}": expected true, false, 1 or 0 but found ${JSON.stringify(value)}`);
}

/** A text value; `allowNumber` accepts JSON numbers (JSONL `label` and `id`). */
function parseText(value: unknown, file: string, line: number, column: Column, allowNumber: boolean): string {
  if (typeof value === 'string' && value !== '') return value;
  if (allowNumber && typeof value === 'number' && Number.isFinite(value)) return String(value);
  const expected = allowNumber ? 'a non-empty string or a number' : 'a non-empty string';
  throw lineError(file, line, `column "${column}": expected ${expected} but found ${value === undefined ? 'nothing' : JSON.stringify(value)}`);
}

/** Turns parsed lines into a Manifest (shared by CSV and JSONL). */
function buildManifest(lines: ManifestLine[], file: string, layout: 'csv' | 'jsonl'): Manifest {
  const folder = dirname(file);
  const firstLineOfId = new Map<string, number>();
  const items: ManifestItem[] = lines.map(({ line, values }): ManifestItem => {
    const path = parseText(values.path, file, line, 'path', false);
    const label = parseText(values.label, file, line, 'label', layout === 'jsonl');
    const split = isAbsent(values.split) ? 'test' : parseText(values.split, file, line, 'split', false);
    const id = isAbsent(values.id) ? path : parseText(values.id, file, line, 'id', layout === 'jsonl');
    const queryAbsent = isAbsent(values.is_query);
    if (queryAbsent !== isAbsent(values.is_gallery)) {
      throw lineError(file, line, `columns "is_query" and "is_gallery" must both be given or both be left empty; found only "${queryAbsent ? 'is_gallery' : 'is_query'}"`);
    }
    const isQuery = queryAbsent ? split !== 'train' : parseFlag(values.is_query, file, line, 'is_query');
    const isGallery = queryAbsent ? split !== 'train' : parseFlag(values.is_gallery, file, line, 'is_gallery');
    const earlier = firstLineOfId.get(id);
    if (earlier !== undefined) throw lineError(file, line, `column "id": id ${JSON.stringify(id)} is already used on line ${earlier}`);
    firstLineOfId.set(id, line);
    return { id, source: { kind: 'file', path: resolve(folder, path) }, label, split, isQuery, isGallery };
  });
  if (items.length === 0) throw new DmlError('E_EMPTY', `Manifest ${file} lists no images`);
  const queries = items.filter((i) => i.isQuery).length;
  const gallery = items.filter((i) => i.isGallery).length;
  const sameSet = queries > 0 && items.every((i) => i.isQuery === i.isGallery);
  return {
    layout,
    root: file,
    protocol: `${layout.toUpperCase()} manifest ${basename(file)}: ${queries} queries, ${gallery} gallery items${sameSet ? ' (query set = gallery set)' : ''}`,
    defaultK: [1, 2, 4, 8],
    items,
  };
}

/** Reads a CSV manifest (see the file comment). */
export async function readCsvManifest(file: string, options: LayoutReadOptions): Promise<Manifest> {
  const [header, ...records] = parseCsv(await readTextFile(file, 'CSV manifest'), file);
  if (!header) throw new DmlError('E_DATASET', `CSV manifest ${file} is empty; expected a header line such as "path,label,split"`);
  const names = header.fields.map((f) => f.trim().toLowerCase());
  const columnIndex = new Map<Column, number>();
  const unknown: string[] = [];
  names.forEach((name, index) => {
    if (names.indexOf(name) !== index) throw lineError(file, header.line, `column ${JSON.stringify(name)} appears twice in the header`);
    if ((COLUMNS as readonly string[]).includes(name)) columnIndex.set(name as Column, index);
    else unknown.push(name);
  });
  for (const required of ['path', 'label'] as const) {
    if (!columnIndex.has(required)) {
      throw lineError(file, header.line, `header has no "${required}" column (found ${summarizeNames(names, names.length)}); required: path, label`);
    }
  }
  if (unknown.length > 0) options.warn(`CSV manifest ${file}: ignored columns ${summarizeNames(unknown, unknown.length)}`);
  const lines = records.map(({ line, fields }): ManifestLine => {
    if (fields.length !== names.length) {
      throw lineError(file, line, `has ${fields.length} fields; the header has ${names.length} (${names.join(',')})`);
    }
    const values: Partial<Record<Column, unknown>> = {};
    for (const [column, index] of columnIndex) values[column] = fields[index];
    return { line, values };
  });
  return buildManifest(lines, file, 'csv');
}

/** Reads a JSONL manifest (see the file comment). */
export async function readJsonlManifest(file: string, options: LayoutReadOptions): Promise<Manifest> {
  const text = await readTextFile(file, 'JSONL manifest');
  const unknown = new Set<string>();
  const lines: ManifestLine[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() === '') return;
    const line = i + 1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw lineError(file, line, `not valid JSON: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw lineError(file, line, `expected a JSON object such as {"path": "a.jpg", "label": "cat"} but found ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)}`);
    }
    const values: Partial<Record<Column, unknown>> = {};
    for (const [key, value] of Object.entries(parsed)) {
      if ((COLUMNS as readonly string[]).includes(key)) values[key as Column] = value;
      else unknown.add(key);
    }
    lines.push({ line, values });
  });
  if (unknown.size > 0) options.warn(`JSONL manifest ${file}: ignored keys ${summarizeNames([...unknown], unknown.size)}`);
  return buildManifest(lines, file, 'jsonl');
}
