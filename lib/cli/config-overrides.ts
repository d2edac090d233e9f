/**
 * @file `dml train --config c.json key=value ...`: any field of the config set from the command line.
 * A key is the field's dotted path (`optimizer.learningRate`, `data.image.height`, `model.hidden`); a
 * value is read as JSON when it is JSON (`0.001`, `true`, `[64, 32]`, `{"kind": "cosine"}`, `null`)
 * and as a string otherwise (`folder:data/x`). Missing objects on the path are created. Setting
 * `steps` drops the config's `epochs` and the reverse, as `--steps` and `--epochs` do. The config
 * is validated afterwards as a whole, so a misspelt key is named there ("did you mean").
 */
import { DmlError } from '../errors.js';

/** One override parsed: its path and value. */
export interface ConfigOverride {
  path: string[];
  value: unknown;
}

/** Parses `key=value`; E_ARG for a word without `=` or with an empty key or path segment. */
export function parseOverride(text: string): ConfigOverride {
  const at = text.indexOf('=');
  const key = at < 0 ? '' : text.slice(0, at);
  const path = key.split('.');
  if (at < 0 || path.some((segment) => segment.trim() === '')) {
    throw new DmlError('E_ARG', `Expected a config override key=value (e.g. optimizer.learningRate=0.001) but received ${JSON.stringify(text)}`);
  }
  const raw = text.slice(at + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // not JSON: the string as written
  }
  return { path, value };
}

/** `config` with every override applied in order (a copy; the input is left as it is). */
export function applyOverrides(config: Record<string, unknown>, overrides: readonly string[]): Record<string, unknown> {
  const result = structuredClone(config);
  for (const text of overrides) {
    const { path, value } = parseOverride(text);
    let target: Record<string, unknown> = result;
    for (const [i, segment] of path.slice(0, -1).entries()) {
      const next = target[segment];
      if (next === undefined || next === null) target[segment] = {};
      else if (typeof next !== 'object') {
        throw new DmlError('E_ARG', `Cannot set ${path.join('.')}: ${path.slice(0, i + 1).join('.')} is ${JSON.stringify(next)}, not an object`);
      }
      target = target[segment] as Record<string, unknown>;
    }
    const last = path[path.length - 1] as string;
    target[last] = value;
    if (path.length === 1 && last === 'steps') delete result['epochs'];
    if (path.length === 1 && last === 'epochs') delete result['steps'];
  }
  return result;
}
