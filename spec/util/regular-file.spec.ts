import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { sha256File, sha256 } from '../../lib/util/hash.js';
import { checkRegularFile, readRegular, readRegularFile, readRegularSync } from '../../lib/util/regular-file.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

describe('util/regular-file', () => {
  let dir: string;
  let fifo: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-regular-file-'));
    fifo = path.join(dir, 'pipe');
    expect(spawnSync('mkfifo', [fifo]).status).to.equal(0);
    symlinkSync(fifo, path.join(dir, 'link-to-pipe'));
    mkdirSync(path.join(dir, 'folder'));
    writeFileSync(path.join(dir, 'plain'), 'text');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a regular file (through a link too)', async () => {
    symlinkSync(path.join(dir, 'plain'), path.join(dir, 'link-to-plain'));
    expect((await readRegularFile(path.join(dir, 'link-to-plain'), 'config')).toString()).to.equal('text');
    expect((await checkRegularFile(path.join(dir, 'plain'), 'config')).size).to.equal(4);
    expect(await sha256File(path.join(dir, 'plain'))).to.equal(sha256('text'));
  });

  it('refuses a FIFO (also behind a link), a character device and a folder at once, naming what it is; a missing file is E_NOT_FOUND', async () => {
    // Each of these used to block (a FIFO without a writer) or read without end (/dev/zero).
    await expectDmlError(readRegularFile(fifo, 'config'), 'E_ARG', `Cannot read config ${fifo}: a FIFO (named pipe), not a regular file`);
    const link = path.join(dir, 'link-to-pipe');
    await expectDmlError(readRegularFile(link, 'preprocessor config'), 'E_ARG', `Cannot read preprocessor config ${link}: a FIFO (named pipe), not a regular file`);
    await expectDmlError(checkRegularFile('/dev/zero', 'model'), 'E_ARG', 'Cannot read model /dev/zero: a character device, not a regular file');
    await expectDmlError(sha256File(fifo, 'external data file'), 'E_ARG', `Cannot read external data file ${fifo}: a FIFO (named pipe), not a regular file`);
    await expectDmlError(readRegularFile(path.join(dir, 'folder'), 'token file'), 'E_ARG', `Cannot read token file ${path.join(dir, 'folder')}: a folder, not a regular file`);
    await expectDmlError(readRegularFile(path.join(dir, 'none'), 'config'), 'E_NOT_FOUND', `Cannot read config ${path.join(dir, 'none')}: no such file`);
  });
  it('readRegularSync reads and refuses as readRegular does (same errors)', async () => {
    const what = 'image';
    for (const file of [path.join(dir, 'plain'), fifo, path.join(dir, 'link-to-pipe'), '/dev/zero', path.join(dir, 'folder'), path.join(dir, 'none')]) {
      const outcome = (run: () => Promise<Buffer>) =>
        run().then(
          (bytes) => ({ bytes: bytes.toString() }),
          (e: Error & { code?: string }) => ({ code: e.code, message: e.message }),
        );
      const expected = await outcome(() => readRegular(file, what));
      expect(await outcome(async () => readRegularSync(file, what)), file).to.deep.equal(expected);
    }
  });
});
