/**
 * @file Assembles the WebAssembly kernels' text (lib/train/wasm/adam-kernel.ts `ADAM_WAT`) with wabt
 * (a devDependency; dmlkit itself ships only the bytes) and writes the base64 of the binary into the
 * `ADAM_WASM_BASE64` constant of the same file. Run after editing the text:
 *
 *   npx tsx scripts/assemble-wasm.ts
 *
 * spec/train/adam-kernel.spec.ts fails while the constant and the text disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { assembleWat } from './wasm-assembler.js';
import { ADAM_WAT } from '../lib/train/wasm/adam-kernel.js';

const file = fileURLToPath(new URL('../lib/train/wasm/adam-kernel.ts', import.meta.url));
const base64 = Buffer.from(await assembleWat(ADAM_WAT)).toString('base64');
const source = readFileSync(file, 'utf8');
const line = /^export const ADAM_WASM_BASE64 = '[A-Za-z0-9+/=]*';$/m;
if (!line.test(source)) throw new Error(`${file}: no line "export const ADAM_WASM_BASE64 = '...';" to replace`);
writeFileSync(file, source.replace(line, `export const ADAM_WASM_BASE64 = '${base64}';`));
console.log(`${file}: ADAM_WASM_BASE64 = ${base64.length} base64 characters`);
