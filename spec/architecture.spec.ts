/**
 * @file The house's floors: each folder of lib/ (a room) imports only rooms on lower floors, so data
 * flows one way; docs/architecture.md lists the same floors. A new import that runs back up fails here, naming the file.
 * `lib/errors.ts` counts as part of util; the entry files at lib/'s top (index.ts, train.ts, facade.ts,
 * ...) stand above every room. And a path a comment names (lib/..., docs/..., scripts/...) exists, so
 * a moved file leaves no comment pointing at nothing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

/** The rooms of lib/, lowest floor first. */
const FLOORS = ['util', 'data', 'image', 'onnx', 'embed', 'search', 'metrics', 'eval', 'report', 'engine', 'index-store', 'serve', 'train', 'export', 'cli'];

const lib = path.resolve('lib');

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The room of a file under lib/: its first folder; lib/errors.ts belongs to util; other top-level files to none. */
function roomOf(file: string): string | undefined {
  const parts = path.relative(lib, file).split(path.sep);
  if (parts.length > 1) return parts[0];
  return parts[0] === 'errors.ts' || parts[0] === 'errors.js' ? 'util' : undefined;
}

/** Relative module specifiers of `from '...'` and `import('...')` in a source text. */
function relativeImports(source: string): string[] {
  return [...source.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] as string);
}

describe('architecture: every room imports only rooms below it', () => {
  const files = typeScriptFiles(lib);

  it('lists every room of lib/ on a floor, as docs/architecture.md does', () => {
    const rooms = new Set(files.map(roomOf).filter((room): room is string => room !== undefined));
    expect([...rooms].sort()).to.deep.equal([...FLOORS].sort());
    const documented = /^Floors, lowest first: (.+)\.$/m.exec(readFileSync('docs/architecture.md', 'utf8'))?.[1];
    expect(documented?.split(', ')).to.deep.equal(FLOORS);
  });

  it('has no import that runs back up', () => {
    const upward: string[] = [];
    for (const file of files) {
      const room = roomOf(file);
      if (room === undefined) continue;
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const target = roomOf(path.resolve(path.dirname(file), specifier));
        if (target === undefined) {
          upward.push(`${path.relative(lib, file)} imports the entry file ${specifier}`);
        } else if (target !== room && FLOORS.indexOf(target) > FLOORS.indexOf(room)) {
          upward.push(`${path.relative(lib, file)} (${room}) imports ${specifier} (${target}, a higher floor)`);
        }
      }
    }
    expect(upward).to.deep.equal([]);
  });
});

describe('architecture: comments point at files that exist', () => {
  /** Source files whose comments name repository files: lib/, bin/, scripts/ and spec/. */
  const sources = ['lib', 'bin', 'scripts', 'spec'].flatMap(function walk(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'fixtures' || entry.name === 'node_modules' ? [] : walk(full);
      return /\.(ts|py|sh)$/.test(entry.name) ? [full] : [];
    });
  });

  it('every path under lib/, docs/, scripts/, spec/, schema/, bin/, models/ or tools/ that a source file names exists (from the repository root or the file\'s folder)', () => {
    const missing: string[] = [];
    for (const file of sources) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const [, named] of line.matchAll(/(?<![\w./-])((?:lib|docs|scripts|spec|schema|bin|models|tools)\/[\w./-]*\.(?:ts|md|py|sh|json|onnx|mjs))/g)) {
            const target = (named as string).replace(/\.$/, '');
            if (!existsSync(target) && !existsSync(path.join(path.dirname(file), target))) missing.push(`${file}:${i + 1} names ${target}`);
          }
        });
    }
    expect(sources.length).to.be.above(300);
    expect(missing).to.deep.equal([]);
  });
});

describe('architecture: no import cycles in the training rooms', () => {
  /** The groups of files under `dir` that import each other in a circle (Tarjan's strongly connected components of more than one file). */
  function importCycles(dir: string): string[][] {
    const files = typeScriptFiles(path.resolve(dir));
    const edges = new Map(
      files.map((file) => [
        file,
        relativeImports(readFileSync(file, 'utf8'))
          .map((specifier) => path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts'))
          .filter((target) => files.includes(target)),
      ]),
    );
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const cycles: string[][] = [];
    const visit = (file: string): void => {
      index.set(file, index.size);
      low.set(file, index.get(file) as number);
      stack.push(file);
      for (const target of edges.get(file) ?? []) {
        if (!index.has(target)) {
          visit(target);
          low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
        } else if (stack.includes(target)) low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
      if (low.get(file) !== index.get(file)) return;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        component.push(path.relative(lib, member));
      } while (member !== file);
      if (component.length > 1) cycles.push(component.sort());
    };
    for (const file of files) if (!index.has(file)) visit(file);
    return cycles;
  }

  for (const room of ['train', 'engine']) {
    it(`lib/${room} has none (type imports included)`, () => {
      expect(importCycles(path.join('lib', room))).to.deep.equal([]);
    });
  }
});
