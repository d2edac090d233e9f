import { spawn } from 'node:child_process';
import { closeSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { ImageSource } from '../../lib/data/manifest.js';
import { DmlError } from '../../lib/errors.js';
import type { ImageBatch } from '../../lib/image/batch-collector.js';
import { loadImageBatch } from '../../lib/image/batch-loader.js';
import { IMAGES_PER_WORKER, ImageDecodePool, makeSlotFile, slotFolders } from '../../lib/image/decode-pool.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { encodeIdx, encodeImage, makePixels, makeTempDir, writeFixture } from './image-fixtures.js';

const imagenet = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const rgbPre: Preprocessing = { height: 24, width: 24, resizeShorter: 28, channels: 3, layout: 'NCHW', ...imagenet };
// resizeShorter 20 < the 24-pixel crop width: wide images are cropped, tall ones zero-padded.
const greyPre: Preprocessing = { height: 20, width: 24, resizeShorter: 20, channels: 1, layout: 'NHWC', mean: [0.5], std: [0.25] };

/** The tensor bytes, for an exact comparison. */
const bytes = (batch: ImageBatch): Buffer => Buffer.from(batch.data.buffer, batch.data.byteOffset, batch.data.byteLength);

/**
 * Whether process `pid` runs: it exists (`kill(pid, 0)`) and is not a zombie. An orphan that has exited
 * stays a zombie until init reaps it, which took ~2 s in this container, so /proc is asked where it exists.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!existsSync('/proc/self')) return true; // no procfs: kill(pid, 0) is all there is to know
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] !== 'Z';
  } catch {
    return false; // gone in between
  }
}

describe('ImageDecodePool', function () {
  // Starting the children under tsx takes 1-2 s on 2 busy vCPUs; each test itself is short.
  this.timeout(20_000);
  let dir: string;
  let rgbPool: ImageDecodePool;
  let greyPool: ImageDecodePool;
  const photos: ImageSource[] = [];
  const idx: ImageSource[] = [];
  let garbage: ImageSource;
  let empty: ImageSource;
  let missing: ImageSource;

  before(async () => {
    dir = makeTempDir('dml-decode-pool-');
    const starting = Promise.all([
      ImageDecodePool.start({ workers: 2, preprocessing: rgbPre }),
      ImageDecodePool.start({ workers: 1, preprocessing: greyPre }),
    ]);
    // photos of different sizes, RGB and grey, PNG and JPEG, so decodes finish in different orders
    for (let i = 0; i < 12; i++) {
      const w = 40 + 23 * i;
      const h = 30 + 17 * ((i * 7) % 10);
      const channels = i % 3 === 2 ? 1 : 3;
      const pixels = makePixels(w, h, (x, y) => [(x * (i + 3) + y) & 255, (y * (i + 5)) & 255, (x ^ y ^ i) & 255].slice(0, channels));
      const format = i % 2 === 0 ? 'png' : 'jpeg';
      photos.push({ kind: 'file', path: writeFixture(dir, `photo${i}.${format}`, await encodeImage(pixels, w, h, channels, format)) });
    }
    const idxFile = writeFixture(dir, 'images-idx3-ubyte', encodeIdx(3, 2, 3, [0, 50, 100, 150, 200, 250, 1, 2, 3, 4, 5, 6, 9, 8, 7, 6, 5, 4]));
    idx.push(...[0, 1, 2].map((index): ImageSource => ({ kind: 'idx', file: idxFile, index })));
    garbage = { kind: 'file', path: writeFixture(dir, 'garbage.jpg', Buffer.from('not an image')) };
    empty = { kind: 'file', path: writeFixture(dir, 'empty.png', Buffer.alloc(0)) };
    missing = { kind: 'file', path: path.join(dir, 'missing.png') };
    [rgbPool, greyPool] = await starting;
  });

  after(async () => {
    await Promise.all([rgbPool?.close(), greyPool?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives byte-identical RGB NCHW batches to loadImageBatch, in order, with more images than workers', async () => {
    const sources = [...photos, ...idx, ...photos.slice().reverse(), idx[1]!];
    const pooled = await rgbPool.loadBatch(sources);
    const local = await loadImageBatch(sources, rgbPre);
    expect(pooled.shape).to.deep.equal([28, 3, 24, 24]);
    expect(pooled.loaded).to.deep.equal(local.loaded);
    expect(pooled.failures).to.deep.equal([]);
    expect(bytes(pooled).equals(bytes(local))).to.equal(true);
    // slot i holds image i: slot 15 (the reversed list's first) holds photo 11, as slot 11 does
    const slot = (i: number): Buffer => bytes(pooled).subarray(i * 3 * 24 * 24 * 4, (i + 1) * 3 * 24 * 24 * 4);
    expect(slot(15).equals(slot(11))).to.equal(true);
    expect(slot(15).equals(slot(10))).to.equal(false);
  });

  it('writes into a caller-given output array, with the bytes loadImageBatch gives', async () => {
    const output = new Float32Array(13 * 3 * 24 * 24).fill(Number.NaN);
    const pooled = await rgbPool.loadBatch(photos, { output });
    const local = await loadImageBatch(photos, rgbPre);
    expect(pooled.data.buffer).to.equal(output.buffer);
    expect(bytes(pooled).equals(bytes(local))).to.equal(true);
    await expectDmlError(rgbPool.loadBatch(photos, { output: new Float32Array(3) }), 'E_ARG', /^Expected a Float32Array or Uint8Array of at least 20736 values/);
  });

  it("with a Uint8Array output, gives the crops' bytes loadImageBatch gives, skipped images packed alike", async () => {
    const sources = [...photos.slice(0, 5), garbage, ...idx];
    const output = new Uint8Array(9 * 24 * 24 * 3);
    const pooled = await rgbPool.loadBatch(sources, { output, skipBadImages: true });
    const local = await loadImageBatch(sources, rgbPre, { output: new Uint8Array(9 * 24 * 24 * 3), skipBadImages: true });
    expect(pooled.data).to.be.instanceOf(Uint8Array);
    expect(pooled.shape).to.deep.equal([8, 24, 24, 3]);
    expect(pooled.loaded).to.deep.equal(local.loaded);
    expect(pooled.failures.map((f) => f.index)).to.deep.equal([5]);
    expect(Buffer.from(pooled.data).equals(Buffer.from(local.data))).to.equal(true);
  });

  it('gives byte-identical grey NHWC batches (PNG, JPEG and IDX items, cropped and padded)', async () => {
    const sources = [...idx, ...photos];
    const pooled = await greyPool.loadBatch(sources);
    const local = await loadImageBatch(sources, greyPre);
    expect(pooled.shape).to.deep.equal([15, 20, 24, 1]);
    expect(bytes(pooled).equals(bytes(local))).to.equal(true);
  });

  it('serves queued batches first come, first served, each exactly as loaded alone', async () => {
    const parts = [photos.slice(0, 5), idx, photos.slice(5)];
    const pooled = await Promise.all(parts.map((part) => rgbPool.loadBatch(part)));
    for (const [i, part] of parts.entries()) {
      expect(bytes(pooled[i]!).equals(bytes(await loadImageBatch(part, rgbPre))), `batch ${i}`).to.equal(true);
    }
    const none = await rgbPool.loadBatch([]);
    expect(none).to.deep.equal(await loadImageBatch([], rgbPre));
  });

  it('throws the same DmlError as in-process for the lowest-index bad image', async () => {
    const sources = [photos[0]!, photos[1]!, garbage, photos[2]!, missing, empty];
    const local = await expectDmlError(loadImageBatch(sources, rgbPre), 'E_IMAGE', /garbage\.jpg: not an image in a supported format/);
    await expectDmlError(rgbPool.loadBatch(sources), local.code, local.message);
    const idxOutOfRange: ImageSource = { ...idx[0]!, index: 7 } as ImageSource;
    await expectDmlError(rgbPool.loadBatch([photos[0]!, idxOutOfRange]), 'E_IMAGE', /images-idx3-ubyte: IDX image index 7 out of range/);
  });

  it('with skipBadImages, reports the same failures (code and one-line message) and the same data', async () => {
    const sources = [photos[0]!, garbage, photos[1]!, missing, empty, photos[2]!];
    const pooled = await rgbPool.loadBatch(sources, { skipBadImages: true });
    const local = await loadImageBatch(sources, rgbPre, { skipBadImages: true });
    expect(pooled.loaded).to.deep.equal([0, 2, 5]);
    expect(pooled.shape).to.deep.equal(local.shape);
    expect(pooled.failures).to.deep.equal(local.failures);
    expect(pooled.failures.map((f) => f.code)).to.deep.equal(['E_IMAGE', 'E_NOT_FOUND', 'E_IMAGE']);
    expect(pooled.failures[0]!.source).to.equal(garbage);
    expect(bytes(pooled).equals(bytes(local))).to.equal(true);
  });

  it('rejects with E_CANCELLED when the signal is aborted, before or during the batch', async () => {
    const before = new AbortController();
    before.abort();
    await expectDmlError(rgbPool.loadBatch(photos, { signal: before.signal }), 'E_CANCELLED', 'Image loading cancelled (0 of 12 images loaded)');
    const during = new AbortController();
    const pending = rgbPool.loadBatch([...photos, ...photos], { signal: during.signal });
    during.abort();
    // The images already handed to the two children finish; no new one starts.
    const atMost = Array.from({ length: 2 * IMAGES_PER_WORKER + 1 }, (_, n) => n).join('|');
    await expectDmlError(pending, 'E_CANCELLED', new RegExp(`^Image loading cancelled \\((${atMost}) of 24 images loaded\\)$`));
    expect(bytes(await rgbPool.loadBatch(photos.slice(0, 2))).equals(bytes(await loadImageBatch(photos.slice(0, 2), rgbPre)))).to.equal(true);
  });

  it('rejects bad options naming the parameter, expectation and value', async () => {
    await expectDmlError(ImageDecodePool.start({ workers: 0, preprocessing: rgbPre }), 'E_ARG', 'Expected a positive integer for workers but received 0');
    await expectDmlError(
      ImageDecodePool.start({ workers: 1, preprocessing: { ...rgbPre, channels: 2 as 1 } }),
      'E_ARG',
      'Expected 1 or 3 for preprocessing.channels but received 2',
    );
    await expectDmlError(
      ImageDecodePool.start({ workers: 1, preprocessing: rgbPre, limitInputPixels: 1.5 }),
      'E_ARG',
      'Expected a positive integer for limitInputPixels but received 1.5',
    );
    await expectDmlError(rgbPool.loadBatch('a.png' as unknown as ImageSource[]), 'E_ARG', 'Expected an array of image sources for sources but received "a.png"');
  });

  it('leaves no slot file behind: each name is removed once its child is ready', async () => {
    const ours = (): string[] => slotFolders().flatMap((folder) => readdirSync(folder).filter((name) => name.startsWith(`dmlkit-decode-${process.pid}-`)));
    expect(ours()).to.deep.equal([]);
    const pool = await ImageDecodePool.start({ workers: 2, preprocessing: rgbPre });
    try {
      expect(ours()).to.deep.equal([]);
      expect(bytes(await pool.loadBatch(photos)).equals(bytes(await loadImageBatch(photos, rgbPre)))).to.equal(true);
    } finally {
      await pool.close();
    }
    expect(ours()).to.deep.equal([]);
  });

  it('makes a slot file in the first folder that can hold it, and names every folder when none can', () => {
    const notAFolder = writeFixture(dir, 'not-a-folder', Buffer.from('x'));
    const { file, fd } = makeSlotFile([notAFolder, dir], 1000);
    try {
      expect(path.dirname(file)).to.equal(dir);
      expect(readFileSync(file)).to.deep.equal(Buffer.alloc(1000)); // written whole, with zeros
    } finally {
      closeSync(fd);
      rmSync(file);
    }
    expect(() => makeSlotFile([notAFolder, path.join(dir, 'missing')], 1000)).to.throw(DmlError, new RegExp(`^Cannot make a 1000-byte slot file for an image decode worker in ${notAFolder} \\(ENOTDIR.*\\), nor in ${path.join(dir, 'missing')} \\(ENOENT`));
  });

  it('close() stops every child and later calls reject', async () => {
    const pids = greyPool.pids;
    expect(pids).to.have.length(1);
    expect(alive(pids[0]!)).to.equal(true);
    await greyPool.close();
    expect(pids.filter(alive)).to.deep.equal([]);
    await expectDmlError(greyPool.loadBatch(photos), 'E_CANCELLED', 'The image decode pool is closed');
  });

  it('children exit when the parent process is killed (kill -9) while they work', async () => {
    const script = [
      "import { ImageDecodePool } from './lib/image/decode-pool.ts';",
      `const pool = await ImageDecodePool.start({ workers: 1, preprocessing: ${JSON.stringify(rgbPre)} });`,
      `void pool.loadBatch(Array(200).fill(${JSON.stringify(photos[11])}));`,
      'console.log(JSON.stringify(pool.pids));',
      'setInterval(() => undefined, 1000);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids = await new Promise<number[]>((resolve) => parent.stdout.once('data', (line: Buffer) => resolve(JSON.parse(line.toString()) as number[])));
    expect(pids.filter(alive)).to.have.length(1);
    parent.kill('SIGKILL');
    for (let waited = 0; pids.some(alive) && waited < 5_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pids.filter(alive)).to.deep.equal([]);
  });

  it('a child killed mid-batch rejects that batch naming its pid and images; the rest go on', async function () {
    this.timeout(5_000);
    const [victim, survivor] = rgbPool.pids as [number, number];
    const pending = rgbPool.loadBatch([...photos, ...photos]);
    process.kill(victim, 'SIGKILL');
    const err = await expectDmlError(pending, 'E_IMAGE', new RegExp(`^Image decode worker \\(pid ${victim}\\) killed by SIGKILL while decoding .*photo\\d+\\.(png|jpeg)`));
    expect(err.message).to.contain(dir);
    expect(rgbPool.pids).to.deep.equal([survivor]);
    expect(bytes(await rgbPool.loadBatch(photos.slice(0, 3))).equals(bytes(await loadImageBatch(photos.slice(0, 3), rgbPre)))).to.equal(true);
    await rgbPool.close();
    expect([victim, survivor].filter(alive)).to.deep.equal([]);
  });
});
