// TypeDoc configuration of dmlkit's API reference (`npm run docs` -> docs/api). Every public entry
// point is documented; links must resolve and every exported declaration must be reachable.
import { OptionDefaults } from 'typedoc';
import { writeLanding } from './landing.mjs';

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  name: 'dmlkit',
  entryPoints: ['../../lib/index.ts', '../../lib/train.ts', '../../lib/export.ts', '../../lib/serve.ts'],
  tsconfig: './tsconfig.json',
  out: '../../docs/api',
  // The landing page is the README's Library section (landing.mjs), the declarations grouped by area
  // (categories.mjs), each naming the file that declares it.
  readme: writeLanding(),
  plugin: ['./categories.mjs'],
  categorizeByGroup: false,
  categoryOrder: ['Evaluate', 'Embed', 'Search', 'Data', 'Metrics', 'Reports', 'Train', 'Export', 'Serve', 'Errors', 'Utilities', '*'],
  // The files' `@file` headers describe modules for readers of the source.
  blockTags: [...OptionDefaults.blockTags, '@file'],
  excludePrivate: true,
  excludeInternal: true,
  // "Defined in" links to the declaring file in this checkout (docs/api/<kind>/<page>.html is three
  // folders below the repository root); no git remote is assumed.
  disableGit: true,
  basePath: '../..',
  sourceLinkTemplate: '../../../lib/{path}#L{line}',
  validation: { notExported: true, invalidLink: true, rewrittenLink: true, notDocumented: true, unusedMergeModuleWith: true },
  // Declarations (functions, classes, interfaces, type aliases, variables) must be documented; their
  // properties are documented where the name alone does not say enough.
  requiredToBeDocumented: ['Enum', 'Variable', 'Function', 'Class', 'Interface', 'TypeAlias', 'Method', 'Accessor'],
  treatWarningsAsErrors: true,
};
