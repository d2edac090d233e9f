/**
 * @file WebAssembly text to binary with wabt (devDependency), SIMD enabled, and the list of dmlkit's
 * kernel modules (text, the constant holding the assembled bytes, its file): shared by
 * scripts/tools/assemble-wasm.ts and the spec that checks the committed bytes.
 */
import wabtFactory from 'wabt';
import { ADAM_WASM_BASE64, ADAM_WAT } from '../../lib/engine/tfjs/wasm/adam-kernel.js';
import { BATCH_NORM_WASM_BASE64, BATCH_NORM_WAT } from '../../lib/engine/tfjs/wasm/batch-norm-simd.js';
import { RELU_POOL_WASM_BASE64, RELU_POOL_WAT } from '../../lib/engine/tfjs/wasm/relu-pool-kernels.js';

/** One kernel module: its text, the name and current value of the constant with its bytes, and that constant's file. */
export interface WasmKernelSource {
  wat: string;
  constant: string;
  base64: string;
  file: string;
}

/** dmlkit's WebAssembly kernel modules. */
export const WASM_KERNELS: readonly WasmKernelSource[] = [
  { wat: ADAM_WAT, constant: 'ADAM_WASM_BASE64', base64: ADAM_WASM_BASE64, file: 'lib/engine/tfjs/wasm/adam-kernel.ts' },
  { wat: RELU_POOL_WAT, constant: 'RELU_POOL_WASM_BASE64', base64: RELU_POOL_WASM_BASE64, file: 'lib/engine/tfjs/wasm/relu-pool-kernels.ts' },
  { wat: BATCH_NORM_WAT, constant: 'BATCH_NORM_WASM_BASE64', base64: BATCH_NORM_WASM_BASE64, file: 'lib/engine/tfjs/wasm/batch-norm-simd.ts' },
];

/** The .wasm bytes of `wat` (throws wabt's message on a syntax or validation error). */
export async function assembleWat(wat: string): Promise<Uint8Array> {
  const wabt = await wabtFactory();
  const module = wabt.parseWat('kernel.wat', wat, { simd: true });
  try {
    module.validate();
    return module.toBinary({ log: false, write_debug_names: false }).buffer;
  } finally {
    module.destroy();
  }
}
