import { expect } from 'chai';
import * as tf from '@tensorflow/tfjs';
import { OutputArrayPool, outputArrays } from '../../../../lib/engine/tfjs/ort-cpu/output-arrays.js';
import { useOrtCpuBackend } from '../../../helpers/compare-backends.js';

/**
 * ort-cpu/output-arrays.ts: kernel output arrays are reused after their tensor is disposed, never
 * while another tensor holds or views them, and reads hand out copies that later kernels cannot
 * overwrite.
 */
describe('ort-cpu output-array pool', function () {
  this.timeout(30_000);

  it('reuses a released array for the next output of its length, and only then', () => {
    const pool = new OutputArrayPool();
    const a = pool.take(5000);
    pool.register(a);
    expect(pool.take(5000), 'while a tensor holds it').to.not.equal(a);
    pool.release(a);
    expect(pool.freeBytes).to.equal(20000);
    expect(pool.take(4999), 'another length').to.not.equal(a);
    expect(pool.take(5000)).to.equal(a);
    expect(pool.freeBytes).to.equal(0);
  });

  it('reuses an array that two entries held, or one held and one viewed, only after both are gone; never one released unregistered', () => {
    const pool = new OutputArrayPool();
    const shared = pool.take(5000);
    pool.register(shared);
    pool.register(shared);
    pool.release(shared);
    expect(pool.freeBytes, 'one holder left').to.equal(0);
    pool.release(shared);
    expect(pool.freeBytes).to.equal(20000);
    expect(pool.take(5000)).to.equal(shared);
    const viewed = pool.take(5000);
    pool.register(viewed);
    pool.register(viewed.subarray(10, 20));
    pool.release(viewed);
    expect(pool.freeBytes, 'the view is still held').to.equal(0);
    pool.release(viewed.subarray(10, 20));
    expect(pool.freeBytes).to.equal(20000);
    const unknown = pool.take(4096);
    pool.release(unknown);
    pool.register(unknown);
    pool.release(unknown);
    expect(pool.freeBytes, 'ownership unknown: not reused').to.equal(20000);
  });

  it('leaves small arrays and arrays beyond its byte budget to the garbage collector; copies its arrays on read', () => {
    const pool = new OutputArrayPool(30000);
    const small = pool.take(100);
    pool.register(small);
    pool.release(small);
    const [a, b] = [pool.take(5000), pool.take(5000)];
    for (const x of [a, b]) {
      pool.register(x);
      pool.release(x);
    }
    expect(pool.freeBytes, 'one of two 20,000-byte arrays fits 30,000 bytes').to.equal(20000);
    const own = new Float32Array(5000);
    expect(pool.readable(own)).to.equal(own);
    const read = pool.readable(a);
    expect(read).to.not.equal(a);
    expect(Array.from(read)).to.deep.equal(Array.from(a));
  });

  describe('on the ort-cpu backend', () => {
    useOrtCpuBackend();

    it('values read before a dispose stay as read while later kernels reuse the array', () => {
      const n = 1 << 16;
      const x = tf.tensor1d(Float32Array.from({ length: n }, (_, i) => i - n / 2));
      const y = tf.relu(x);
      const read = y.dataSync();
      const expected = Array.from(read);
      const before = outputArrays.freeBytes;
      y.dispose();
      expect(outputArrays.freeBytes - before, 'the disposed output is free for reuse').to.equal(4 * n);
      const z = tf.tidy(() => tf.relu(tf.neg(x)));
      expect(outputArrays.freeBytes, 'the next output of that length reused it').to.equal(before);
      expect(Array.from(read)).to.deep.equal(expected);
      tf.dispose([x, z]);
    });

    it('an array that a slice views is not reused until the slice is disposed too', () => {
      const n = 1 << 16;
      const x = tf.tensor2d(Float32Array.from({ length: n }, (_, i) => i - n / 2), [256, n / 256]);
      const y = tf.relu(x);
      const half = tf.slice(y, [0, 0], [128, n / 256]); // tfjs's cpu Slice: a subarray of y's array
      const expected = Array.from(half.dataSync());
      const before = outputArrays.freeBytes;
      y.dispose();
      expect(outputArrays.freeBytes, 'y viewed: not pooled').to.equal(before);
      const z = tf.tidy(() => tf.relu(tf.neg(x)));
      expect(Array.from(half.dataSync())).to.deep.equal(expected);
      half.dispose();
      expect(outputArrays.freeBytes, 'pooled once the slice is gone').to.equal(before + 4 * n);
      tf.dispose([x, z]);
    });
  });
});
