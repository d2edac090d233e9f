/**
 * @file `--class-names <file>`: display names for the labels of a dataset whose labels are numbers
 * (IDX sets, CSV manifests of class ids). A `.json` file maps labels to names
 * (`{"0": "T-shirt/top", ...}`); any other file holds one name per line, line i (from 0) naming label
 * `i`, as torchvision's and Keras's class lists do. The reports show the names; the labels stay what
 * the metrics, `--train-classes` and report.json key on.
 */
import { readRegularFile } from '../util/regular-file.js';
import { DmlError } from '../errors.js';

/** Reads the class names of `file` for a dataset of `labels` (see the file comment); `flag` names the option in errors. */
export async function readClassNames(file: string, labels: ReadonlySet<string>, flag = '--class-names'): Promise<Record<string, string>> {
  const text = (await readRegularFile(file, `${flag} file`)).toString('utf8');
  let names: Record<string, string>;
  if (file.toLowerCase().endsWith('.json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new DmlError('E_ARG', `${flag} ${file} is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((v) => typeof v === 'string')) {
      throw new DmlError('E_ARG', `${flag} ${file}: expected a JSON object of label -> class name strings, e.g. {"0": "T-shirt/top"}`);
    }
    names = parsed as Record<string, string>;
  } else {
    const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
    while (lines.length > 0 && lines[lines.length - 1]?.trim() === '') lines.pop();
    names = Object.fromEntries(lines.map((line, i) => [String(i), line.trim()]));
  }
  const named = Object.keys(names).filter((label) => labels.has(label));
  if (named.length === 0) {
    const sample = [...labels].slice(0, 3).map((l) => JSON.stringify(l)).join(', ');
    throw new DmlError('E_ARG', `${flag} ${file} names labels ${Object.keys(names).slice(0, 3).join(', ')}${Object.keys(names).length > 3 ? ', ...' : ''}, but none of the dataset's labels (${sample}${labels.size > 3 ? ', ...' : ''}) is among them`);
  }
  return Object.fromEntries(named.map((label) => [label, names[label] as string]));
}
