/**
 * @file How to start a worker-thread entry module that sits beside its caller: the compiled `.js` file
 * in `dist/`, or, when the caller runs as TypeScript through tsx (the specs, `tsx bin/dml.ts`), the
 * `.ts` file after registering tsx inside the worker.
 *
 * Measured on Node 20.20 with tsx 4.23: `--import tsx` in a worker's execArgv does not apply to its
 * entry module (ERR_UNKNOWN_FILE_EXTENSION), and a caller loaded through `require` is compiled to
 * CommonJS, where `import.meta.resolve` is missing; so an eval'd one-line bootstrap registers tsx's
 * CommonJS hooks (`tsx/cjs/api`) and requires the entry. An entry started this way must have no
 * top-level await.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** `new Worker(filename, options)` arguments for the entry `baseName` (no extension) beside `callerUrl`. */
export function workerThreadEntry(callerUrl: string, baseName: string): { filename: string | URL; options: { eval?: boolean } } {
  if (fileURLToPath(callerUrl).endsWith('.ts')) {
    const entry = fileURLToPath(new URL(`./${baseName}.ts`, callerUrl));
    const tsx = createRequire(callerUrl).resolve('tsx/cjs/api');
    const bootstrap = `require(${JSON.stringify(tsx)}).register(); require(${JSON.stringify(entry)});`;
    return { filename: bootstrap, options: { eval: true } };
  }
  return { filename: new URL(`./${baseName}.js`, callerUrl), options: {} };
}
