/**
 * @file A labelled image folder from installed icon themes: real artwork, offline, for training
 * benchmarks on a set of a few thousand classes (issue 16's "real image set").
 *
 * Each icon of a theme (category and name, e.g. `actions/document-save`) is one class; its images are
 * the theme's PNG renderings at its sizes (8x8 to 256x256, drawn separately by the artists, not
 * scaled copies), so a class holds 4-8 views of one design at different resolutions. Icons with
 * fewer than `--min-images` sizes are left out. Classes are numbered 0..n-1 in a seeded random order
 * (so a range such as `trainClasses: "0-1499"` is a class-disjoint split mixing themes and
 * categories); the folder holds one subfolder per class with a symbolic link per size
 * (`<n>/<size>.png`), and `<out>.classes.tsv` beside it names them (number, theme, category, name,
 * sizes; beside, not inside, since a `folder:` dataset holds class folders only). Both are written
 * under temporary names and renamed into place; an existing `--out` or classes file is never touched.
 *
 * With Debian's oxygen-icon-theme and tango-icon-theme (`apt-get install -y oxygen-icon-theme
 * tango-icon-theme`): 2,246 classes, 11,102 images.
 *
 *   npx tsx scripts/tools/icon-dataset.ts --out data/icons [--themes /usr/share/icons/oxygen/base,/usr/share/icons/Tango] [--min-images 4] [--seed 0]
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../lib/util/rng.js';

/** Options of {@link buildIconDataset}. */
export interface IconDatasetOptions {
  /** Theme folders, each holding `<W>x<H>/<category>/<name>.png`. */
  themes: readonly string[];
  /** The folder to create (must not exist). */
  out: string;
  /** Fewest sizes an icon needs to become a class. */
  minImages: number;
  /** Seed of the class order. */
  seed: number;
}

/** One class of the folder: an icon of a theme and the paths of its sizes. */
export interface IconClass {
  theme: string;
  category: string;
  name: string;
  /** Size folder name (e.g. `64x64`) to PNG path, in ascending size. */
  images: Array<[string, string]>;
}

const SIZE_FOLDER = /^(\d+)x(\d+)$/;

function directories(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** The icons of `themes` with at least `minImages` PNG sizes, in sorted order (theme, category, name). */
export function iconClasses(themes: readonly string[], minImages: number): IconClass[] {
  const classes: IconClass[] = [];
  for (const theme of themes) {
    if (!existsSync(theme) || !statSync(theme).isDirectory()) throw new Error(`--themes: ${theme} is not a folder (install the theme, e.g. apt-get install -y oxygen-icon-theme tango-icon-theme)`);
    const byIcon = new Map<string, IconClass>();
    const sizes = directories(theme).filter((d) => SIZE_FOLDER.test(d)).sort((a, b) => Number(SIZE_FOLDER.exec(a)?.[1]) - Number(SIZE_FOLDER.exec(b)?.[1]));
    for (const size of sizes) {
      for (const category of directories(path.join(theme, size))) {
        for (const file of readdirSync(path.join(theme, size, category)).filter((f) => f.endsWith('.png')).sort()) {
          const name = file.slice(0, -'.png'.length);
          const key = `${category}/${name}`;
          let icon = byIcon.get(key);
          if (!icon) byIcon.set(key, (icon = { theme: path.basename(theme) === 'base' ? path.basename(path.dirname(theme)) : path.basename(theme), category, name, images: [] }));
          icon.images.push([size, path.resolve(theme, size, category, file)]);
        }
      }
    }
    classes.push(...[...byIcon.keys()].sort().map((k) => byIcon.get(k) as IconClass).filter((c) => c.images.length >= minImages));
  }
  return classes;
}

/** Writes the folder described in the file comment; returns its classes in their numbered order. */
export function buildIconDataset(options: IconDatasetOptions): IconClass[] {
  const classesFile = `${options.out}.classes.tsv`;
  for (const target of [options.out, classesFile]) if (existsSync(target)) throw new Error(`--out: ${target} exists; give a new folder`);
  if (!Number.isSafeInteger(options.minImages) || options.minImages < 2) throw new Error(`--min-images: expected an integer of at least 2, got ${options.minImages}`);
  const classes = new Rng(options.seed).shuffle(iconClasses(options.themes, options.minImages));
  if (classes.length === 0) throw new Error(`no icon of ${options.themes.join(', ')} has ${options.minImages} or more PNG sizes`);
  const partial = `${options.out}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    mkdirSync(partial, { recursive: true });
    const rows = ['class\ttheme\tcategory\tname\tsizes'];
    classes.forEach((c, i) => {
      mkdirSync(path.join(partial, String(i)));
      for (const [size, file] of c.images) symlinkSync(file, path.join(partial, String(i), `${size}.png`));
      rows.push([i, c.theme, c.category, c.name, c.images.map(([s]) => s).join(',')].join('\t'));
    });
    writeFileSync(`${partial}.classes.tsv`, `${rows.join('\n')}\n`);
    renameSync(partial, options.out);
    renameSync(`${partial}.classes.tsv`, classesFile);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    rmSync(`${partial}.classes.tsv`, { force: true });
    throw err;
  }
  return classes;
}

function flag(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : fallback;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const out = flag(args, '--out', '');
  if (out === '') {
    console.error('usage: npx tsx scripts/tools/icon-dataset.ts --out <new folder> [--themes a,b] [--min-images 4] [--seed 0]');
    process.exit(2);
  }
  try {
    const classes = buildIconDataset({
      out,
      themes: flag(args, '--themes', '/usr/share/icons/oxygen/base,/usr/share/icons/Tango').split(','),
      minImages: Number(flag(args, '--min-images', '4')),
      seed: Number(flag(args, '--seed', '0')),
    });
    console.log(`${out}: ${classes.length} classes, ${classes.reduce((n, c) => n + c.images.length, 0)} images (${out}.classes.tsv names them)`);
  } catch (err) {
    console.error(`icon-dataset: ${(err as Error).message}`);
    process.exit(1);
  }
}
