/**
 * @file The versions of dmlkit, Node and the native packages, read from their package.json files
 * without loading the packages: recorded in every report and exported model.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/**
 * The installed version of package `name`, read from its package.json without loading the package: its
 * `package.json` export when it has one, else the nearest package.json of that name above its resolved
 * entry (sharp, for one, does not export its package.json).
 */
function packageVersion(name: string): string {
  try {
    return (require(`${name}/package.json`) as { version: string }).version;
  } catch {
    // Not exported: walk up from the entry file.
  }
  try {
    let dir = path.dirname(require.resolve(name));
    for (;;) {
      const file = path.join(dir, 'package.json');
      if (existsSync(file)) {
        const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (json.name === name && typeof json.version === 'string') return json.version;
      }
      const parent = path.dirname(dir);
      if (parent === dir) return 'unknown';
      dir = parent;
    }
  } catch {
    return 'unknown';
  }
}

/** Versions of dmlkit, Node and the native packages that produced the numbers. */
export function collectVersions(): Record<string, string> {
  const own = require('dmlkit/package.json') as { version: string };
  return {
    dmlkit: own.version,
    node: process.version,
    'onnxruntime-node': packageVersion('onnxruntime-node'),
    sharp: packageVersion('sharp'),
    'hnswlib-node': packageVersion('hnswlib-node'),
  };
}
