import { expect } from 'chai';

/**
 * How far `actual` is from `expected` as a whole tensor: the largest |actual - expected| over the
 * largest |expected| (at least `floor`, so that a tensor of tiny values is compared absolutely).
 * Fails when the lengths differ.
 */
export function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>, floor = 1e-3): number {
  expect(actual.length).to.equal(expected.length);
  let diff = 0;
  let scale = floor;
  for (let i = 0; i < expected.length; i++) {
    diff = Math.max(diff, Math.abs((actual[i] as number) - (expected[i] as number)));
    scale = Math.max(scale, Math.abs(expected[i] as number));
  }
  return diff / scale;
}
