/**
 * @file WebAssembly text to binary with wabt (devDependency), SIMD enabled: shared by
 * scripts/assemble-wasm.ts and the spec that checks the committed bytes.
 */
import wabtFactory from 'wabt';

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
