import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import { encodeNpy, parseNpy, readNpy, writeNpy } from '../../lib/embed/npy.js';
import { npyBytes } from '../helpers/npy-bytes.js';

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};

describe('npy', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-npy-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the exact version-1.0 header numpy writes and a 64-byte aligned data offset', () => {
    const bytes = concat(encodeNpy(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]));
    const headerLength = bytes[8]! | (bytes[9]! << 8);
    expect((10 + headerLength) % 64).to.equal(0);
    const header = new TextDecoder('latin1').decode(bytes.subarray(10, 10 + headerLength));
    expect(header.trimEnd()).to.equal("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect(header.endsWith('\n')).to.equal(true);
  });

  it('round-trips every numeric type and 1-D shapes', async () => {
    const cases = [
      new Float32Array([1.5, -2.25]),
      new Float64Array([Math.PI, -1e300]),
      new Int32Array([-7, 2147483647]),
      new BigInt64Array([-5n, 1n << 62n]),
      new Uint8Array([0, 255]),
      new Int16Array([-3, 3]),
    ];
    for (const data of cases) {
      const file = path.join(dir, 'a.npy');
      await writeNpy(file, data, [2]);
      const back = await readNpy(file);
      expect(back.shape).to.deep.equal([2]);
      expect(Array.from(back.data as ArrayLike<unknown>)).to.deep.equal(Array.from(data as ArrayLike<unknown>));
      expect(back.data.constructor).to.equal(data.constructor);
    }
  });

  it('reads unicode string arrays (<U) as labels', () => {
    // numpy: np.array(['ab', 'c']) -> dtype <U2, UTF-32LE code points, zero padded
    const data = new Uint32Array([0x61, 0x62, 0x63, 0]);
    const parsed = parseNpy(npyBytes('<U2', [2], new Uint8Array(data.buffer)), 'labels.npy');
    expect(parsed.data).to.deep.equal(['ab', 'c']);
  });

  it('rejects Fortran order, big-endian, truncated data and garbage with the file name', () => {
    const good = concat(encodeNpy(new Float32Array([1, 2, 3, 4]), [2, 2]));
    const text = new TextDecoder('latin1').decode(good);
    const mutate = (from: string, to: string): Uint8Array => Uint8Array.from(text.replace(from, to), (c) => c.charCodeAt(0));
    expect(() => parseNpy(mutate("'fortran_order': False", "'fortran_order': True "), 'f.npy')).to.throw(DmlError, /f\.npy.*Fortran/);
    expect(() => parseNpy(mutate("'<f4'", "'>f4'"), 'b.npy')).to.throw(DmlError, /b\.npy.*big-endian/);
    expect(() => parseNpy(good.subarray(0, good.length - 3), 't.npy')).to.throw(DmlError, /t\.npy.*truncated/);
    expect(() => parseNpy(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), 'g.npy')).to.throw(DmlError, /g\.npy.*magic/);
  });

  it('reports a missing file as E_NOT_FOUND', async () => {
    try {
      await readNpy(path.join(dir, 'missing.npy'));
      expect.fail('should throw');
    } catch (err) {
      expect((err as DmlError).code).to.equal('E_NOT_FOUND');
      expect((err as DmlError).message).to.contain('missing.npy');
    }
  });

  it('reads float16 (<f2) widened exactly to float32: normal, subnormal, zero, infinity, NaN', () => {
    // 1.0, -2.5, 65504 (largest half), 2^-24 (smallest subnormal), -0, +inf, NaN, 0.333 (0x3555)
    const halves = new Uint16Array([0x3c00, 0xc100, 0x7bff, 0x0001, 0x8000, 0x7c00, 0x7e00, 0x3555]);
    const parsed = parseNpy(npyBytes('<f2', [2, 4], new Uint8Array(halves.buffer)), 'half.npy');
    expect(parsed.dtype).to.equal('<f2');
    expect(parsed.shape).to.deep.equal([2, 4]);
    expect(parsed.data).to.be.instanceOf(Float32Array);
    const v = Array.from(parsed.data as Float32Array);
    expect(v.slice(0, 4)).to.deep.equal([1, -2.5, 65504, 2 ** -24]);
    expect(Object.is(v[4], -0)).to.equal(true);
    expect(v[5]).to.equal(Infinity);
    expect(Number.isNaN(v[6])).to.equal(true);
    expect(v[7]).to.equal(0.333251953125); // (1 + 341/1024) * 2^-2
  });

  it('interoperates with numpy when Debian python3-numpy is present', function () {
    if (!existsSync('/usr/bin/python3')) this.skip();
    try {
      execFileSync('/usr/bin/python3', ['-c', 'import numpy'], { stdio: 'ignore' });
    } catch {
      this.skip(); // numpy is a dev-only cross-check, never a dependency
    }
    const ours = path.join(dir, 'ours.npy');
    const theirs = path.join(dir, 'theirs.npy');
    writeFileSync(ours, concat(encodeNpy(new Float32Array([0.5, -1, 2, 8]), [2, 2])));
    const out = execFileSync('/usr/bin/python3', [
      '-c',
      `import numpy as np; a = np.load(${JSON.stringify(ours)}); print(a.dtype, a.shape, a.tolist()); np.save(${JSON.stringify(theirs)}, np.arange(6, dtype=np.int64).reshape(3, 2))`,
    ]).toString();
    expect(out.trim()).to.equal('float32 (2, 2) [[0.5, -1.0], [2.0, 8.0]]');
    const back = parseNpy(readFileSync(theirs), theirs);
    expect(back.shape).to.deep.equal([3, 2]);
    expect(Array.from(back.data as BigInt64Array, Number)).to.deep.equal([0, 1, 2, 3, 4, 5]);
    const half = path.join(dir, 'half.npy');
    execFileSync('/usr/bin/python3', ['-c', `import numpy as np; np.save(${JSON.stringify(half)}, (np.arange(12, dtype=np.float32).reshape(3, 4) / 7).astype(np.float16))`]);
    const expected = execFileSync('/usr/bin/python3', ['-c', `import numpy as np; print(repr(np.load(${JSON.stringify(half)}).astype(np.float32).tolist()))`]).toString().trim();
    const halves = parseNpy(readFileSync(half), half);
    expect(JSON.stringify(Array.from(halves.data as Float32Array))).to.equal(JSON.stringify(JSON.parse(expected).flat()));
  });
});
