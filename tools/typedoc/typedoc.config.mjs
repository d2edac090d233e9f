// TypeDoc configuration of dmlkit's API reference (`npm run docs` -> docs/api). Every public entry
// point is documented; links must resolve and every exported declaration must be reachable.
import { OptionDefaults } from 'typedoc';

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  name: 'dmlkit',
  entryPoints: ['../../lib/index.ts', '../../lib/train.ts', '../../lib/export.ts', '../../lib/serve.ts'],
  tsconfig: './tsconfig.json',
  out: '../../docs/api',
  readme: 'none',
  // The files' `@file` headers describe modules for readers of the source.
  blockTags: [...OptionDefaults.blockTags, '@file'],
  excludePrivate: true,
  excludeInternal: true,
  disableSources: true,
  validation: { notExported: true, invalidLink: true, rewrittenLink: true, notDocumented: true, unusedMergeModuleWith: true },
  // Declarations (functions, classes, interfaces, type aliases, variables) must be documented; their
  // properties are documented where the name alone does not say enough.
  requiredToBeDocumented: ['Enum', 'Variable', 'Function', 'Class', 'Interface', 'TypeAlias', 'Method', 'Accessor'],
  treatWarningsAsErrors: true,
};
