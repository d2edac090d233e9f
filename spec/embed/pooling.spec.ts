import { expect } from 'chai';
import { poolTokens } from '../../lib/embed/pooling.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

describe('embed/pooling', () => {
  // 2 images x 3 tokens x 2 dims; token 0 is the class token.
  const data = Float32Array.from([1, 2, 3, -4, 5, 6, /* image 2 */ -1, 0, 7, 8, -3, 2]);

  it('cls takes token 0; mean and max use the patch tokens 1..T-1 only', () => {
    expect(Array.from(poolTokens(data, 2, 3, 2, 'cls', 'm'))).to.deep.equal([1, 2, -1, 0]);
    expect(Array.from(poolTokens(data, 2, 3, 2, 'mean', 'm'))).to.deep.equal([4, 1, 2, 5]);
    expect(Array.from(poolTokens(data, 2, 3, 2, 'max', 'm'))).to.deep.equal([5, 6, 7, 8]);
  });

  it('mean and max need a patch token', async () => {
    await expectDmlError(() => poolTokens(new Float32Array(2), 1, 1, 2, 'mean', 'm.onnx'), 'E_MODEL', 'm.onnx: --pooling mean averages the patch tokens after the class token, but the output has 1 token');
  });
});
