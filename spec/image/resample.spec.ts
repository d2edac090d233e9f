/**
 * @file The Pillow-exact resampler against Pillow itself: spec/fixtures/hub/resample holds a 53x37 RGB
 * image and Pillow 9.4's `Image.resize` of it (reducing_gap None) with each filter, downscaled,
 * upscaled and mixed (scripts/reference/make_hub_fixtures.py). Every byte must match.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { resampleRaw } from '../../lib/image/resample.js';
import type { RawImage } from '../../lib/image/raw-image.js';
import type { ResampleFilter } from '../../lib/image/preprocessing.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

const DIR = 'spec/fixtures/hub/resample';

async function load(file: string): Promise<RawImage> {
  const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
  expect(info.channels).to.equal(3);
  return { data, width: info.width, height: info.height, channels: 3 };
}

describe('image/resample (Pillow-exact)', () => {
  const cases = readdirSync(DIR).filter((f) => f !== 'source.png').sort();

  it('has a case per filter for downscaling, upscaling and mixed', () => {
    expect(cases).to.have.length(12);
  });

  for (const file of cases) {
    const [filter, size] = file.replace('.png', '').split('_') as [ResampleFilter, string];
    const [width, height] = size.split('x').map(Number) as [number, number];
    it(`${filter} 53x37 -> ${width}x${height} equals Pillow byte for byte`, async () => {
      const source = await load(path.join(DIR, 'source.png'));
      const expected = await load(path.join(DIR, file));
      const out = resampleRaw(source, width, height, filter);
      expect([out.width, out.height]).to.deep.equal([width, height]);
      let differing = 0;
      for (let i = 0; i < expected.data.length; i++) if (out.data[i] !== expected.data[i]) differing++;
      expect(differing, 'bytes differing from Pillow').to.equal(0);
    });
  }

  it('returns a same-size image unchanged, and refuses a bad size', async () => {
    const source = await load(path.join(DIR, 'source.png'));
    expect(resampleRaw(source, 53, 37, 'bicubic')).to.equal(source);
    await expectDmlError(() => resampleRaw(source, 0, 5, 'bilinear'), 'E_ARG', /width/);
  });
});
