/**
 * @file Output writes: regular files replaced atomically, links followed (the link kept), FIFOs and
 * character devices written in place (never replaced by a regular file), folders and loops refused.
 * The devices are made with mknod in a temporary folder (CI runs as root), never the machine's own.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { fifoWithReader } from '../helpers/special-files.js';
import { makeTempDir } from '../image/image-fixtures.js';

/** Makes a character device node `major, minor` at `file` (as /dev/null is 1,3 and /dev/full 1,7). */
function mknod(file: string, major: number, minor: number): void {
  const res = spawnSync('mknod', [file, 'c', String(major), String(minor)], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`mknod ${file} failed (these specs run as root, as CI does): ${res.stderr}`);
}

describe('util/writeFileAtomic', () => {
  let tmp: string;
  beforeEach(() => (tmp = makeTempDir('dml-write-')));
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  it('creates a new file (and its folder) and replaces a regular file with a new one, leaving no temporary file', async () => {
    const file = path.join(tmp, 'out', 'report.json');
    await writeFileAtomic(file, 'one');
    const before = statSync(file).ino;
    await writeFileAtomic(file, [Buffer.from('tw'), Buffer.from('o')]);
    expect(readFileSync(file, 'utf8')).to.equal('two');
    expect(statSync(file).ino, 'a new file renamed over the old one').not.to.equal(before);
    expect(readdirSync(path.dirname(file))).to.deep.equal(['report.json']);
  });

  it('follows links (absolute, relative, chained, dangling) and replaces the final target, keeping every link', async () => {
    mkdirSync(path.join(tmp, 'real'));
    const target = path.join(tmp, 'real', 'report.json');
    writeFileSync(target, 'old');
    symlinkSync(target, path.join(tmp, 'absolute'));
    symlinkSync('real/report.json', path.join(tmp, 'relative'));
    symlinkSync('relative', path.join(tmp, 'chained'));
    for (const [i, link] of ['absolute', 'relative', 'chained'].entries()) {
      await writeFileAtomic(path.join(tmp, link), `new ${i}`);
      expect(lstatSync(path.join(tmp, link)).isSymbolicLink(), link).to.equal(true);
      expect(readFileSync(target, 'utf8')).to.equal(`new ${i}`);
    }
    expect(readlinkSync(path.join(tmp, 'chained'))).to.equal('relative');
    symlinkSync('real/not-yet.json', path.join(tmp, 'dangling'));
    await writeFileAtomic(path.join(tmp, 'dangling'), 'created');
    expect(lstatSync(path.join(tmp, 'dangling')).isSymbolicLink()).to.equal(true);
    expect(readFileSync(path.join(tmp, 'real', 'not-yet.json'), 'utf8')).to.equal('created');
    expect(readdirSync(path.join(tmp, 'real')).sort()).to.deep.equal(['not-yet.json', 'report.json']);
  });

  it('streams into a FIFO, which stays a FIFO', async () => {
    const fifo = path.join(tmp, 'pipe');
    const { read } = fifoWithReader(fifo);
    await writeFileAtomic(fifo, 'through the pipe\n');
    expect(await read).to.equal('through the pipe\n');
    expect(lstatSync(fifo).isFIFO()).to.equal(true);
  });

  it('writes into a character device in place: a null device stays one; a full device is an error and stays one', async () => {
    const nul = path.join(tmp, 'null');
    mknod(nul, 1, 3);
    await writeFileAtomic(nul, 'discarded');
    expect(lstatSync(nul).isCharacterDevice()).to.equal(true);
    // A link to a device: the device is written, the link kept.
    symlinkSync(nul, path.join(tmp, 'to-null'));
    await writeFileAtomic(path.join(tmp, 'to-null'), 'discarded');
    expect(lstatSync(path.join(tmp, 'to-null')).isSymbolicLink()).to.equal(true);
    const full = path.join(tmp, 'full');
    mknod(full, 1, 7);
    await expectDmlError(writeFileAtomic(full, 'no room'), 'E_IO', `Cannot write ${full}: ENOSPC: no space left on device, write`);
    expect(lstatSync(full).isCharacterDevice()).to.equal(true);
    expect(readdirSync(tmp).sort()).to.deep.equal(['full', 'null', 'to-null']);
  });

  it('refuses a folder and a loop of links with one line, writing nothing', async () => {
    mkdirSync(path.join(tmp, 'folder'));
    await expectDmlError(writeFileAtomic(path.join(tmp, 'folder'), 'x'), 'E_IO', `Cannot write ${path.join(tmp, 'folder')}: ${path.join(tmp, 'folder')} is a folder (expected a regular file, a FIFO or a character device)`);
    symlinkSync('b', path.join(tmp, 'a'));
    symlinkSync('a', path.join(tmp, 'b'));
    await expectDmlError(writeFileAtomic(path.join(tmp, 'a'), 'x'), 'E_IO', `Cannot write ${path.join(tmp, 'a')}: more than 40 symbolic links to follow (a loop?)`);
    expect(readdirSync(tmp).sort()).to.deep.equal(['a', 'b', 'folder']);
    expect(readdirSync(path.join(tmp, 'folder'))).to.deep.equal([]);
  });

  it('a file where an output folder should go is named (--out naming a file), not "EEXIST ... mkdir"', async () => {
    const file = path.join(tmp, 'report');
    writeFileSync(file, 'x');
    for (const target of [path.join(file, 'report.json'), path.join(file, 'sub', 'report.json')]) {
      await expectDmlError(writeFileAtomic(target, 'y'), 'E_IO', `Cannot create output folder ${path.dirname(target)}: ${file} is a file, not a folder`);
    }
    expect(readFileSync(file, 'utf8')).to.equal('x');
  });
});
