/**
 * @file Assembles the WebAssembly kernels' text with wabt (a devDependency; dmlkit itself ships only
 * the bytes) and writes the base64 of each binary into its constant, in the file that holds the text:
 * every module of `WASM_KERNELS` (scripts/tools/wasm-assembler.ts), e.g. `ADAM_WAT` -> `ADAM_WASM_BASE64`
 * in lib/engine/tfjs/wasm/adam-kernel.ts. Run after editing a text:
 *
 *   npx tsx scripts/tools/assemble-wasm.ts
 *
 * spec/engine/tfjs/wasm-kernels.spec.ts fails while a constant and its text disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { assembleWat, WASM_KERNELS } from './wasm-assembler.js';

for (const kernel of WASM_KERNELS) {
  const file = fileURLToPath(new URL(`../../${kernel.file}`, import.meta.url));
  const base64 = Buffer.from(await assembleWat(kernel.wat)).toString('base64');
  const source = readFileSync(file, 'utf8');
  const line = new RegExp(`^export const ${kernel.constant} = '[A-Za-z0-9+/=]*';$`, 'm');
  if (!line.test(source)) throw new Error(`${file}: no line "export const ${kernel.constant} = '...';" to replace`);
  writeFileSync(file, source.replace(line, `export const ${kernel.constant} = '${base64}';`));
  console.log(`${kernel.file}: ${kernel.constant} = ${base64.length} base64 characters`);
}
