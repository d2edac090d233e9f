/**
 * Generated blocks of the docs: the text between `<!-- generated: NAME ... -->` and
 * `<!-- /generated: NAME -->` in a Markdown file, written by scripts/tools/update-doc-numbers.ts so
 * that measured numbers (the package's size, the default model's table) are regenerated, not typed.
 */
import { readFileSync } from 'node:fs';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';

/** `text` with the block `name` replaced by `body` (a trailing newline added); an error when the markers are missing. */
export function replaceBlock(text: string, name: string, body: string, file = 'the file'): string {
  const start = new RegExp(`<!-- generated: ${name}\\b[^>]*-->\\n`);
  const end = `<!-- /generated: ${name} -->`;
  const open = start.exec(text);
  const close = text.indexOf(end);
  if (open === null || close < open.index) throw new Error(`${file} has no block "${name}" (<!-- generated: ${name} ... --> ... ${end})`);
  const from = open.index + open[0].length;
  return `${text.slice(0, from)}${body.replace(/\n*$/, '\n')}${text.slice(close)}`;
}

/** Rewrites the block `name` of the Markdown file `file` with `body`. */
export async function writeBlock(file: string, name: string, body: string): Promise<void> {
  await writeFileAtomic(file, replaceBlock(readFileSync(file, 'utf8'), name, body, file));
}
