/**
 * @file onnxruntime's telemetry is off: a `dml eval` run (which creates onnxruntime sessions) leaves
 * no `~/.cache/Microsoft/DeveloperTools/.onnxruntime` folder in a fresh HOME, and the same run with
 * `ORT_DISABLE_TELEMETRY=0` does leave one (so the check can fail). Both runs unset `CI`: with it set,
 * libonnxruntime writes no telemetry either way (measured: the control run found no folder in CI).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { writeNpy } from '../../lib/embed/npy.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('onnx/ort: telemetry', function () {
  this.timeout(60_000);

  it('an eval writes no onnxruntime telemetry files unless ORT_DISABLE_TELEMETRY=0 asks for them', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-telemetry-'));
    try {
      await writeNpy(path.join(dir, 'q.npy'), Float32Array.from([1, 0, 0.9, 0.1, 0, 1, 0.1, 0.9]), [4, 2]);
      await writeNpy(path.join(dir, 'ql.npy'), Int32Array.from([0, 0, 1, 1]), [4]);
      const run = (home: string, extra: Record<string, string>): string => {
        const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
        delete env['ORT_DISABLE_TELEMETRY']; // whatever this process has: the run decides from `extra` alone
        delete env['CI']; // libonnxruntime records no telemetry when CI is set (measured), which would hide both outcomes
        Object.assign(env, extra);
        execFileSync(process.execPath, ['--import', 'tsx', 'bin/dml.ts', 'eval', '--query-embeddings', path.join(dir, 'q.npy'), '--query-labels', path.join(dir, 'ql.npy'), '--k', '1', '--cluster-counts', '1x'], {
          cwd: root,
          env,
          stdio: 'ignore',
        });
        return path.join(home, '.cache', 'Microsoft', 'DeveloperTools', '.onnxruntime');
      };
      const quiet = run(mkdtempSync(path.join(dir, 'home-')), {});
      expect(existsSync(quiet), quiet).to.equal(false);
      const telemetry = run(mkdtempSync(path.join(dir, 'home-')), { ORT_DISABLE_TELEMETRY: '0' });
      expect(existsSync(path.join(telemetry, 'deviceid')), telemetry).to.equal(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
