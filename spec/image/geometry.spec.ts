import { expect } from 'chai';
import {
  centreCrop,
  drawAugmentation,
  randomResizedCropBox,
  resizedSize,
  resizeShorterSize,
  roundHalfEven,
} from '../../lib/image/geometry.js';
import { Rng } from '../../lib/util/rng.js';

/** An Rng stand-in returning scripted values and recording the bounds asked of nextInt. */
function scriptedRng(uniforms: number[], ints: number[]): { rng: Rng; intBounds: number[] } {
  const intBounds: number[] = [];
  const rng = {
    next: () => {
      const u = uniforms.shift();
      if (u === undefined) throw new Error('no scripted uniform left');
      return u;
    },
    nextInt: (n: number) => {
      intBounds.push(n);
      const i = ints.shift();
      if (i === undefined) throw new Error('no scripted integer left');
      return i;
    },
  } as unknown as Rng;
  return { rng, intBounds };
}

describe('image geometry (torchvision arithmetic)', () => {
  it('rounds halves to even like Python 3', () => {
    expect([0.5, 1.5, 2.5, 3.5, -2.5, 2.4, 2.6, 7].map(roundHalfEven)).to.deep.equal([0, 2, 2, 4, -2, 2, 3, 7]);
  });

  it('resizes the shorter side and truncates the longer one (int(), not round())', () => {
    expect(resizeShorterSize(500, 375, 256)).to.deep.equal({ width: 341, height: 256 }); // 341.33
    expect(resizeShorterSize(375, 500, 256)).to.deep.equal({ width: 256, height: 341 });
    expect(resizeShorterSize(300, 500, 256)).to.deep.equal({ width: 256, height: 426 }); // 426.67 -> 426
    expect(resizeShorterSize(100, 100, 256)).to.deep.equal({ width: 256, height: 256 });
    expect(resizeShorterSize(6, 4, 4)).to.deep.equal({ width: 6, height: 4 });
  });

  it('centres crops with round((H - h) / 2), halves to even', () => {
    // margins 3, 5, 7, 1 -> offsets 2, 2, 4, 0 (floor would give 1, 2, 3, 0; Math.round 2, 3, 4, 1)
    expect(centreCrop({ width: 9, height: 7 }, { width: 4, height: 4 }).box).to.deep.equal({
      left: 2,
      top: 2,
      width: 4,
      height: 4,
    });
    expect(centreCrop({ width: 11, height: 5 }, { width: 4, height: 4 }).box).to.deep.equal({
      left: 4,
      top: 0,
      width: 4,
      height: 4,
    });
    expect(centreCrop({ width: 256, height: 341 }, { width: 224, height: 224 }).box).to.deep.equal({
      left: 16,
      top: 58, // 117 / 2 = 58.5 -> 58
      width: 224,
      height: 224,
    });
  });

  it("floor rounding is Hugging Face's center_crop: (H - h) // 2, and ceil(d / 2) zeros before on a short axis", () => {
    // margins 3, 5, 7, 1 -> offsets 1, 2, 3, 0
    expect(centreCrop({ width: 9, height: 7 }, { width: 4, height: 4 }, 'floor').box).to.deep.equal({ left: 2, top: 1, width: 4, height: 4 });
    expect(centreCrop({ width: 11, height: 5 }, { width: 4, height: 4 }, 'floor').box).to.deep.equal({ left: 3, top: 0, width: 4, height: 4 });
    expect(centreCrop({ width: 4, height: 10 }, { width: 7, height: 4 }, 'floor')).to.deep.equal({
      box: { left: 0, top: 3, width: 4, height: 4 },
      padding: { top: 0, bottom: 0, left: 2, right: 1 },
    });
  });

  it('resizedSize: longer side keeps the aspect ratio (truncated), exact ignores it, none keeps the image', () => {
    const base = { resizeShorter: 10 };
    expect(resizedSize(90, 60, { ...base, resizeMode: 'longer', resizeLonger: 40 })).to.deep.equal({ width: 40, height: 26 });
    expect(resizedSize(47, 83, { ...base, resizeMode: 'longer', resizeLonger: 40 })).to.deep.equal({ width: 22, height: 40 });
    expect(resizedSize(90, 60, { ...base, resizeMode: 'exact', resizeWidth: 32, resizeHeight: 24 })).to.deep.equal({ width: 32, height: 24 });
    expect(resizedSize(90, 60, { ...base, resizeMode: 'none' })).to.deep.equal({ width: 90, height: 60 });
    expect(resizedSize(90, 60, base)).to.deep.equal({ width: 15, height: 10 });
  });

  it('pads an axis shorter than the crop like torchvision: (d // 2) before, ((d + 1) // 2) after', () => {
    expect(centreCrop({ width: 4, height: 10 }, { width: 7, height: 4 })).to.deep.equal({
      box: { left: 0, top: 3, width: 4, height: 4 },
      padding: { top: 0, bottom: 0, left: 1, right: 2 },
    });
  });

  it('draws a random resized crop in torchvision order: area, log-ratio, then top, then left', () => {
    // 100x80, scale [0.25, 0.75] at u = 0.5 -> area 4000; ratio [0.5, 2] at u = 0.5 -> 1; side round(63.25) = 63
    const { rng, intBounds } = scriptedRng([0.5, 0.5], [5, 7]);
    const box = randomResizedCropBox({ width: 100, height: 80 }, [0.25, 0.75], [0.5, 2], rng);
    expect(box).to.deep.equal({ left: 7, top: 5, width: 63, height: 63 });
    expect(intBounds).to.deep.equal([80 - 63 + 1, 100 - 63 + 1]);
  });

  it('retries until a box fits', () => {
    // attempt 1: area 8000 (u = 1 of [0.5, 1]), ratio 2 (u = 1) -> w = 126 > 100;
    // attempt 2: area 6400 (u = 0.6), ratio 1 (u = 0.5) -> 80x80, top in [0, 1), left in [0, 21)
    const { rng, intBounds } = scriptedRng([1, 1, 0.6, 0.5], [0, 20]);
    expect(randomResizedCropBox({ width: 100, height: 80 }, [0.5, 1], [0.5, 2], rng)).to.deep.equal({
      left: 20,
      top: 0,
      width: 80,
      height: 80,
    });
    expect(intBounds).to.deep.equal([1, 21]);
  });

  it('falls back to the centred box with the ratio clamped after 10 failed attempts (20 draws)', () => {
    const seed = 11;
    const rng = new Rng(seed);
    // ratio 3 on a square: w = sqrt(300) > 10 always -> fallback h = round(10 / 3) = 3, top = (10 - 3) // 2
    expect(randomResizedCropBox({ width: 10, height: 10 }, [1, 1], [3, 3], rng)).to.deep.equal({
      left: 0,
      top: 3,
      width: 10,
      height: 3,
    });
    const reference = new Rng(seed);
    for (let i = 0; i < 20; i++) reference.next();
    expect(rng.nextUint32()).to.equal(reference.nextUint32());
    // ratio 0.25 on a square: w = round(10 * 0.25) = round(2.5) = 2 (half to even), left = (10 - 2) // 2
    expect(randomResizedCropBox({ width: 10, height: 10 }, [1, 1], [0.2, 0.25], new Rng(1))).to.deep.equal({
      left: 4,
      top: 0,
      width: 2,
      height: 10,
    });
  });

  it('keeps random boxes inside the image, their area fraction within the scale range up to rounding', () => {
    const rng = new Rng(3);
    for (let i = 0; i < 500; i++) {
      const { left, top, width, height } = randomResizedCropBox({ width: 50, height: 40 }, [0.08, 1], [3 / 4, 4 / 3], rng);
      expect(left).to.be.at.least(0);
      expect(top).to.be.at.least(0);
      expect(left + width).to.be.at.most(50);
      expect(top + height).to.be.at.most(40);
      expect((width * height) / 2000).to.be.within(0.05, 1);
    }
  });

  it('draws the flip after the crop: u < flipProbability', () => {
    const crop = { left: 0, top: 0, width: 10, height: 10 };
    const full = { scale: [1, 1] as [number, number], ratio: [1, 1] as [number, number] };
    // crop draws: 2 uniforms + 2 integers, then the flip uniform
    expect(drawAugmentation({ width: 10, height: 10 }, { ...full, flipProbability: 0.5 }, scriptedRng([0, 0, 0.49], [0, 0]).rng)).to.deep.equal({ crop, flip: true });
    expect(drawAugmentation({ width: 10, height: 10 }, { ...full, flipProbability: 0.5 }, scriptedRng([0, 0, 0.5], [0, 0]).rng)).to.deep.equal({ crop, flip: false });
  });
});
