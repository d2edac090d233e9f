import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { acquireFolderLock, releaseFolderLock } from '../../lib/util/folder-lock.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

describe('util/folder-lock', () => {
  let dir: string;
  let lock: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-folder-lock-'));
    lock = path.join(dir, 'lock');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('one holder at a time: a live holder is named, a released lock is free again', async () => {
    const file = await acquireFolderLock(dir, `Run folder ${dir}`);
    expect(file).to.equal(lock);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).to.include({ pid: process.pid, host: os.hostname() });
    await expectDmlError(
      acquireFolderLock(dir, `Run folder ${dir}`),
      'E_IO',
      `Run folder ${dir} is in use by process ${process.pid} on ${os.hostname()} (lock file ${lock}); stop that process, or delete the lock file if it is gone`,
    );
    await releaseFolderLock(file);
    expect(existsSync(lock)).to.equal(false);
    await releaseFolderLock(await acquireFolderLock(dir, 'x'));
  });

  it('takes over the lock of a process that is gone, and an empty or cut-short one', async () => {
    const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
    for (const stale of [JSON.stringify({ pid: dead, host: os.hostname() }), '', '{"pi', '{"pid":12']) {
      writeFileSync(lock, stale);
      await acquireFolderLock(dir, 'x');
      expect(JSON.parse(readFileSync(lock, 'utf8')), JSON.stringify(stale)).to.include({ pid: process.pid });
      await releaseFolderLock(lock);
    }
  });

  it('never deletes a file named lock that is no lock (weights, another program\'s file, a FIFO): refused, naming it, kept', async () => {
    const foreign = [Buffer.from(new Float32Array([1, 2, 3, 4]).buffer), Buffer.from('{"owner":"someone else"}'), Buffer.alloc(4096, 7)];
    for (const bytes of foreign) {
      writeFileSync(lock, bytes);
      await expectDmlError(acquireFolderLock(dir, `Index ${dir}`), 'E_IO', `Cannot lock Index ${dir}: ${lock} is not a lock file written by dmlkit; move it away (it is not removed)`);
      expect(readFileSync(lock)).to.deep.equal(bytes);
    }
    rmSync(lock);
    expect(spawnSync('mkfifo', [lock]).status).to.equal(0);
    await expectDmlError(acquireFolderLock(dir, 'x'), 'E_IO', /is not a lock file written by dmlkit/);
  });
});
