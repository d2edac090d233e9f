/**
 * @file Resuming in a fresh process, as a user resumes after a crash or to add epochs: `dml train` for
 * one epoch in one process, `dml train --resume --epochs 2` in another, against `dml train --epochs 2`
 * uninterrupted, on the cpu and the ort-cpu backends. A new process names its variables afresh
 * (`head/kernel`, where the first process had `head/kernel_1`), so the optimizer state must be matched
 * by the layers' stable names (checkpoint-io.ts). The runs agree bit for bit: the resumed run loads the
 * checkpoint's weights into a model built by the same builders (so the training layers compute with the
 * same rounding), the probe step leaves batch-norm statistics as they were, and the fused Adam restores
 * its bias-correction products as the running float32 products (run-folder.spec.ts kills runs, with
 * and without batch norm, in the middle of an epoch).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function dmlTrain(config: string, ...extra: string[]): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'bin/dml.ts', 'train', '--config', config, ...extra], { cwd: root, env: { ...process.env, CI: '1' }, stdio: 'ignore' });
}

function stepLosses(out: string): number[] {
  return readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; loss: number | null })
    .filter((e) => e.type === 'step')
    .map((e) => e.loss ?? Number.NaN);
}

function weights(out: string): Float32Array {
  const bytes = readFileSync(path.join(out, 'checkpoints', 'last', 'weights.bin'));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

describe('train: resume in a fresh process', function () {
  this.timeout(180_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'dml-resume-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const backend of ['cpu', 'ort-cpu'] as const) {
    it(`${backend}: one epoch, then --resume to two in another process, equals two epochs uninterrupted`, () => {
      const config = (out: string): string => {
        const file = path.join(dir, `${path.basename(out)}.json`);
        writeFileSync(
          file,
          JSON.stringify(tinyTrainConfig(out, { backend })),
        );
        return file;
      };
      const split = path.join(dir, `${backend}-split`);
      const whole = path.join(dir, `${backend}-whole`);
      dmlTrain(config(split));
      dmlTrain(config(split), '--resume', '--epochs', '2');
      dmlTrain(config(whole), '--epochs', '2');
      expect(stepLosses(split)).to.deep.equal(stepLosses(whole));
      expect(Array.from(weights(split))).to.deep.equal(Array.from(weights(whole)));
    });
  }
});
