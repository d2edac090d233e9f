/**
 * @file What `dml train` does to its run folder when things go wrong, in real processes: a refused or
 * failed `--resume` leaves every byte as it was; a `kill -9` in the middle of an epoch is recovered by
 * `--resume` to the weights and step losses of an uninterrupted run; a batch larger than the training
 * set is a warning on stderr and in report.json.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { DmlError } from '../../lib/errors.js';
import { parseTrainConfig } from '../../lib/train/config.js';
import { train } from '../../lib/train/trainer.js';
import { onCpuBackend } from '../helpers/tf-backend.js';
import { tinyTrainConfig } from '../helpers/tiny-train-config.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DML = ['--import', 'tsx', 'bin/dml.ts', 'train'];
const env = { ...process.env, CI: '1' };

/** Runs `dml train` to completion; returns its exit code and stderr. */
function dmlTrain(config: string, ...extra: string[]): { code: number; stderr: string } {
  const res = spawnSync(process.execPath, [...DML, '--config', config, ...extra], { cwd: root, env, encoding: 'utf8' });
  return { code: res.status ?? -1, stderr: res.stderr };
}

/** Every file under `dir` (relative path -> SHA-256 of its bytes), folders included (as 'folder'). */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (sub: string): void => {
    for (const name of readdirSync(path.join(dir, sub)).sort()) {
      const rel = path.join(sub, name);
      if (statSync(path.join(dir, rel)).isDirectory()) {
        files[rel] = 'folder';
        walk(rel);
      } else {
        files[rel] = createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex');
      }
    }
  };
  walk('');
  return files;
}

function weights(out: string): Float32Array {
  const bytes = readFileSync(path.join(out, 'checkpoints', 'last', 'weights.bin'));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

type LogEntry = { type: string; epoch: number; step?: number; loss: number | null };
const logEntries = (out: string): LogEntry[] =>
  readFileSync(path.join(out, 'log.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as LogEntry);

describe('train: the run folder', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'dml-run-folder-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const writeConfig = (name: string, overrides: Record<string, unknown> = {}): { file: string; out: string } => {
    const out = path.join(dir, name);
    const file = path.join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(tinyTrainConfig(out, overrides)));
    return { file, out };
  };

  describe('a refused or failed --resume leaves the folder byte-identical', () => {
    onCpuBackend();
    let run: { file: string; out: string };
    let before: Record<string, string>;
    beforeEach(function () {
      if (run === undefined) {
        run = writeConfig('refused', { epochs: 2 });
        expect(dmlTrain(run.file).code).to.equal(0);
      }
      before = snapshot(run.out);
      expect(Object.keys(before)).to.include.members(['config.json', 'log.jsonl', 'report.json', path.join('checkpoints', 'last', 'weights.bin')]);
    });
    afterEach(() => expect(snapshot(run.out)).to.deep.equal(before));

    it('another configuration (--seed) is refused', () => {
      const res = dmlTrain(run.file, '--resume', '--epochs', '3', '--seed', '7');
      expect(res.code).to.equal(2);
      expect(res.stderr).to.equal(`dml: Cannot resume from ${path.join(run.out, 'checkpoints', 'last')}: it was written by a different configuration: seed (0 in the checkpoint, 7 now)\n`);
    });

    it('a new run into the folder without --resume is refused, naming --resume, a new --out and --overwrite', () => {
      const res = dmlTrain(run.file, '--epochs', '1');
      expect(res).to.deep.equal({ code: 2, stderr: `dml: ${run.out} already holds a training run (checkpoints/last/checkpoint.json): give --resume to continue it, a new --out, or --overwrite to replace it\n` });
      expect(dmlTrain(run.file, '--resume', '--overwrite')).to.deep.equal({ code: 2, stderr: 'dml: Give --resume (continue the run) or --overwrite (replace it), not both\n' });
    });

    it('fewer epochs than the checkpoint has is refused (it used to rewrite config.json and report.json)', () => {
      const res = dmlTrain(run.file, '--resume', '--epochs', '1');
      expect(res.code).to.equal(2);
      expect(res.stderr).to.equal(`dml: Cannot resume from ${path.join(run.out, 'checkpoints', 'last')}: it is at epoch 2, past the 1 epoch(s) asked for; give --epochs 2 or more\n`);
    });

    it('a resume that fails at its first step (here: the onBatch hook throws) writes nothing, not even config.json', async () => {
      const config = parseTrainConfig(tinyTrainConfig(run.out, { epochs: 3 }), 'test');
      let error: unknown;
      try {
        await train(config, {
          resume: true,
          onBatch: () => {
            throw new Error('stop at the first step');
          },
        });
      } catch (err) {
        error = err;
      }
      expect((error as Error).message).to.equal('stop at the first step');
      expect(JSON.parse(readFileSync(path.join(run.out, 'config.json'), 'utf8')).epochs).to.equal(2);
    });

    it('a checkpoint whose weights.bin was altered fails naming the checksum, and nothing else changes', () => {
      const file = path.join(run.out, 'checkpoints', 'last', 'weights.bin');
      const good = readFileSync(file);
      const bad = Buffer.from(good);
      bad[10] = (bad[10] as number) ^ 0xff;
      writeFileSync(file, bad);
      before = snapshot(run.out);
      try {
        const res = dmlTrain(run.file, '--resume', '--epochs', '3');
        expect(res.code).to.equal(1);
        expect(res.stderr).to.match(
          new RegExp(`^dml: Checkpoint .*last is corrupt: weights\\.bin has the recorded size \\(${good.length} bytes\\) but its SHA-256 checksum [0-9a-f]{12}… differs from the [0-9a-f]{12}… that checkpoint\\.json records \\(its content was altered\\)\\n$`),
        );
        expect(snapshot(run.out)).to.deep.equal(before);
      } finally {
        writeFileSync(file, good);
        before = snapshot(run.out);
      }
    });
  });

  describe('one writer per run folder, and no half-started run left behind', () => {
    onCpuBackend();
    const config = (name: string, overrides: Record<string, unknown> = {}): ReturnType<typeof parseTrainConfig> =>
      parseTrainConfig(tinyTrainConfig(path.join(dir, name), overrides), 'test');
    const failure = async (run: Promise<unknown>): Promise<unknown> => run.then(() => 'trained', (err: unknown) => err);

    it('a second train or --resume on a folder in use is refused, naming the process; the first run is untouched', async () => {
      const first = config('locked', { epochs: 2 });
      const lock = path.join(first.out, 'lock');
      let refused: Promise<unknown[]> | undefined;
      await train(first, {
        onBatch: () => {
          refused ??= Promise.all([failure(train({ ...first, epochs: 3 }, { resume: true })), failure(train(first, { overwrite: true })), failure(train(first))]);
        },
      });
      const message = `Run folder ${first.out} is in use by process ${process.pid} on ${os.hostname()} (lock file ${lock}); stop that process, or delete the lock file if it is gone`;
      for (const err of await (refused as Promise<unknown[]>)) {
        expect((err as DmlError).code).to.equal('E_IO');
        expect((err as Error).message).to.equal(message);
      }
      expect(existsSync(lock)).to.equal(false);
      const lines = logEntries(first.out);
      expect(lines.filter((e) => e.type === 'step')).to.have.length(20);
      expect(lines.filter((e) => e.type === 'epoch').map((e) => e.epoch)).to.deep.equal([0, 1, 2]);
    });

    it('a fresh start that fails before its first step removes what it wrote (the folder it made too), so the same run starts again', async () => {
      const stop = { onBatch: (): never => { throw new Error('stop before the first step'); } };
      const made = config(path.join('made', 'run'));
      expect(await failure(train(made, stop))).to.have.property('message', 'stop before the first step');
      expect(existsSync(path.join(dir, 'made'))).to.equal(false);
      const existing = config('existing');
      mkdirSync(existing.out);
      writeFileSync(path.join(existing.out, 'notes.txt'), 'kept');
      expect(await failure(train(existing, stop))).to.have.property('message', 'stop before the first step');
      expect(readdirSync(existing.out)).to.deep.equal(['notes.txt']);
      await train(existing);
      expect(readdirSync(existing.out).sort()).to.deep.equal(['checkpoints', 'config.json', 'log.jsonl', 'notes.txt', 'report.json', 'scatter']);
      // --overwrite replaces the run: a start that fails leaves none of it (the old log was already gone).
      expect(await failure(train(existing, { overwrite: true, ...stop }))).to.have.property('message', 'stop before the first step');
      expect(readdirSync(existing.out)).to.deep.equal(['notes.txt']);
      // A refused start removes nothing.
      await train(existing);
      const finished = snapshot(existing.out);
      expect(await failure(train(existing))).to.have.property('code', 'E_ARG');
      expect(snapshot(existing.out)).to.deep.equal(finished);
    });

    it('an out that names a file (or lies under one) is one line naming it', async () => {
      const file = path.join(dir, 'a-file');
      writeFileSync(file, 'x');
      for (const out of [file, path.join(file, 'run')]) {
        const err = (await failure(train(parseTrainConfig(tinyTrainConfig(out), 'test')))) as DmlError;
        expect(err.code).to.equal('E_ARG');
        expect(err.message).to.equal(`Cannot use ${out} as the run folder (out, --out): ${out === file ? 'it is' : `${file} is`} a file, not a folder`);
      }
      expect(readFileSync(file, 'utf8')).to.equal('x');
    });
  });

  it('--overwrite replaces a finished run; a config with a byte-order mark is read', () => {
    const run = writeConfig('overwritten');
    writeFileSync(run.file, `\uFEFF${readFileSync(run.file, 'utf8')}`);
    expect(dmlTrain(run.file).code).to.equal(0);
    const first = snapshot(run.out);
    const again = dmlTrain(run.file, '--overwrite', '--seed', '3');
    expect(again.code, again.stderr).to.equal(0);
    expect(JSON.parse(readFileSync(path.join(run.out, 'config.json'), 'utf8')).seed).to.equal(3);
    expect(snapshot(run.out)['checkpoints/last/weights.bin']).not.to.equal(first['checkpoints/last/weights.bin']);
  });

  it('the output path is not part of the run: relative, trailing-slash and moved spellings resume; so does another backend', () => {
    const run = writeConfig('spelled');
    expect(dmlTrain(run.file).code).to.equal(0);
    const relative = path.relative(root, run.out);
    const steps = [
      ['--out', relative, '--epochs', '2'],
      ['--out', `${run.out}/`, '--epochs', '3'],
      ['--out', run.out, '--epochs', '4', '--backend', 'ort-cpu'],
    ];
    for (const extra of steps) {
      const res = dmlTrain(run.file, '--resume', ...extra);
      expect(res.code, `${extra.join(' ')}: ${res.stderr}`).to.equal(0);
    }
    const moved = path.join(dir, 'moved-copy');
    spawnSync('cp', ['-r', run.out, moved]);
    const res = dmlTrain(run.file, '--resume', '--out', moved, '--epochs', '5');
    expect(res.code, res.stderr).to.equal(0);
    expect(logEntries(moved).filter((e) => e.type === 'epoch').map((e) => e.epoch)).to.deep.equal([0, 1, 2, 3, 4, 5]);
  });

  const runs = [
    { name: 'cpu, MLP', overrides: { backend: 'cpu' } },
    { name: 'ort-cpu, MLP with batch norm', overrides: { backend: 'ort-cpu', model: { kind: 'mlp', inputDim: 784, hidden: [16], embeddingDim: 4, batchNorm: true } } },
    // The graph trainer: its optimiser slots and step count travel in the checkpoint's arrays.
    { name: 'onnx graph trainer, MLP with batch norm', overrides: { backend: 'onnx', device: 'cpu', model: { kind: 'mlp', inputDim: 784, hidden: [16], embeddingDim: 4, batchNorm: true } } },
    // The loss's own parameters: the proxies (in the checkpoint's arrays) and their optimiser, at 100x the rate.
    { name: 'onnx graph trainer, Proxy-Anchor with proxies at 100x', overrides: { backend: 'onnx', device: 'cpu', loss: { name: 'proxy-anchor', numClasses: 5, learningRateScale: 100, weightDecay: 0.0001 } } },
  ];
  for (const [i, { name, overrides }] of runs.entries()) {
    it(`kill -9 in the middle of epoch 2, then --resume in a new process, ends bit for bit where an uninterrupted run does (${name})`, async () => {
      // 6 rounds per epoch: 60 steps of about 15 ms, so the kill lands well inside epoch 2. Whenever it
      // lands, the resume starts from the epoch-1 checkpoint, so the result does not depend on the timing.
      const sampler = { kind: 'filled', groupSize: 6, batchSize: 30, repeat: 6 };
      const killed = writeConfig(`killed-${i}`, { epochs: 2, sampler, ...overrides });
      const whole = writeConfig(`whole-${i}`, { epochs: 2, sampler, ...overrides });
      const log = path.join(killed.out, 'log.jsonl');
      const child = spawn(process.execPath, [...DML, '--config', killed.file], { cwd: root, env, stdio: 'ignore' });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      // Kill once epoch 2 has taken 10 steps: the epoch-1 checkpoint exists, epoch 2 is under way.
      for (;;) {
        const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
        if (text.includes('"type":"step","epoch":2,"step":10,')) break;
        if (child.exitCode !== null) throw new Error('the run ended before it could be killed');
        await new Promise((r) => setTimeout(r, 5));
      }
      process.kill(child.pid as number, 'SIGKILL');
      expect(await exited).to.equal('SIGKILL');
      const interrupted = logEntries(killed.out);
      expect(interrupted.some((e) => e.type === 'epoch' && e.epoch === 2), 'killed before epoch 2 ended').to.equal(false);
      expect(JSON.parse(readFileSync(path.join(killed.out, 'checkpoints', 'last', 'state.json'), 'utf8')).epoch).to.equal(1);

      const resumed = dmlTrain(killed.file, '--resume');
      expect(resumed.code, resumed.stderr).to.equal(0);
      expect(resumed.stderr).to.match(/^resuming after epoch 1\n/);
      expect(dmlTrain(whole.file).code).to.equal(0);

      // Every weight (batch-norm moving statistics included), the checkpoint's arrays (the graph optimiser's
      // slots, the loss's proxies) and every step loss, bit for bit.
      expect(Array.from(weights(killed.out))).to.deep.equal(Array.from(weights(whole.out)));
      const arrays = (out: string): Buffer | null => (existsSync(path.join(out, 'checkpoints', 'last', 'arrays.bin')) ? readFileSync(path.join(out, 'checkpoints', 'last', 'arrays.bin')) : null);
      expect(arrays(killed.out)?.equals(arrays(whole.out) as Buffer) ?? arrays(whole.out) === null).to.equal(true);
      // The log holds each step once: the lines of the interrupted epoch were cut before the resume wrote its own.
      const [la, lb] = [logEntries(killed.out), logEntries(whole.out)];
      expect(la.map((e) => `${e.type} ${e.epoch} ${e.step ?? ''} ${e.loss}`)).to.deep.equal(lb.map((e) => `${e.type} ${e.epoch} ${e.step ?? ''} ${e.loss}`));
    });
  }

  it('a batch larger than the training images is a warning on stderr and in report.json', () => {
    const run = writeConfig('big-batch', { data: { ...(tinyTrainConfig('').data as object), maxTrainItems: 12 } });
    const res = dmlTrain(run.file);
    expect(res.code, res.stderr).to.equal(0);
    const warning = 'sampler.batchSize 30 is larger than the 11 training images sampled: each batch repeats every image about 2.2 times; lower batchSize to at most 11 or train on more images';
    expect(res.stderr.split('\n').filter((l) => l.startsWith('warning: '))).to.deep.equal([`warning: ${warning}`]);
    const report = JSON.parse(readFileSync(path.join(run.out, 'report.json'), 'utf8')) as { warnings: string[] };
    expect(report.warnings).to.deep.equal([warning]);
  });
});
