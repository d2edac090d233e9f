/**
 * @file Child-process probe of what an action loads: runs one action in this fresh process, then prints
 * one JSON line with the CLI's exit code (for `cli`) and which heavy packages are in the CommonJS
 * module cache (onnxruntime-node, @tensorflow/*, sharp, hnswlib-node and fastify are CommonJS packages,
 * so an ESM import of them lands there too), plus whether TensorFlow.js created its engine.
 *
 *   node --import tsx spec/helpers/loaded-packages.ts cli <dml arguments...>
 *   node --import tsx spec/helpers/loaded-packages.ts import <module path>
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { runCliCaptured } from './run-cli.js';

/** The packages the probe reports. */
export const PROBED_PACKAGES = ['@tensorflow', 'onnxruntime-node', 'sharp', 'hnswlib-node', 'fastify'] as const;

const [mode, ...args] = process.argv.slice(2);
let code: number | null = null;
if (mode === 'cli') code = (await runCliCaptured(args)).code;
else if (mode === 'import') await import(pathToFileURL(args[0] as string).href);
else throw new Error(`loaded-packages: unknown mode ${mode}`);
const cached = Object.keys(createRequire(import.meta.url).cache);
// package.json files do not count: reports read the packages' versions from them.
const loaded = PROBED_PACKAGES.filter((name) => cached.some((file) => file.includes(`/node_modules/${name}/`) && !file.endsWith('package.json')));
process.stdout.write(`${JSON.stringify({ code, loaded, tfEngine: '_tfengine' in globalThis })}\n`);
