/**
 * @file The optional LanceDB peer in the specs: whether it is installed, and the guard every LanceDB
 * spec runs first (under CI, where .ci/run installs it, its absence is a failure; elsewhere a skip that
 * says how to install it).
 */

/** Whether `@lancedb/lancedb` can be imported. */
export async function lancedbInstalled(): Promise<boolean> {
  try {
    await import('@lancedb/lancedb' as string);
    return true;
  } catch {
    return false;
  }
}

/** In a mocha hook: without LanceDB (`installed` false), fails under CI and otherwise skips, saying how to install it. */
export function requireLancedb(context: Mocha.Context, installed: boolean): void {
  if (installed) return;
  if (process.env['CI'] === 'true') throw new Error('@lancedb/lancedb is not installed (.ci/run installs it)');
  console.log('    (skipped: @lancedb/lancedb is not installed; npm install @lancedb/lancedb@0.37.1 apache-arrow@18.1.0)');
  context.skip();
}
