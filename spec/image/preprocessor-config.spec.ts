/**
 * @file Hugging Face preprocessor_config.json -> dmlkit preprocessing fields, for the processors the
 * fixtures stand in for (spec/fixtures/hub/<name>/preprocessor_config.json), and its errors.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { findPreprocessorConfig, parsePreprocessorConfig, readPreprocessorConfig } from '../../lib/image/preprocessor-config.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { makeTempDir } from './image-fixtures.js';

const HUB = 'spec/fixtures/hub';
const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
const common = { channels: 3, cropRounding: 'floor', rescale: 0.00392156862745098 };

describe('image/preprocessor-config', () => {
  it('ViT: exact resize to {height, width}, bilinear, no crop, mean = std = 0.5', async () => {
    expect(await readPreprocessorConfig(`${HUB}/vit/preprocessor_config.json`)).to.deep.equal({
      ...common,
      rescale: 1 / 255,
      resample: 'bilinear',
      resizeMode: 'exact',
      resizeWidth: 32,
      resizeHeight: 32,
      resizeShorter: 32,
      height: 32,
      width: 32,
      mean: [0.5, 0.5, 0.5],
      std: [0.5, 0.5, 0.5],
    });
  });

  it('DINOv2 (BitImageProcessor): shortest edge 36, bicubic, crop 32, ImageNet statistics', async () => {
    expect(await readPreprocessorConfig(`${HUB}/dinov2/preprocessor_config.json`)).to.deep.equal({
      ...common,
      resample: 'bicubic',
      resizeMode: 'shorter',
      resizeShorter: 36,
      height: 32,
      width: 32,
      ...IMAGENET,
    });
  });

  it('CLIP: shortest edge and crop 32, CLIP statistics; a bare size is the shortest edge for CLIP, a square otherwise', async () => {
    const clip = await readPreprocessorConfig(`${HUB}/clip/preprocessor_config.json`);
    expect(clip).to.deep.include({ resizeMode: 'shorter', resizeShorter: 32, height: 32, width: 32, resample: 'bicubic', mean: [0.48145466, 0.4578275, 0.40821073] });
    const base = { do_center_crop: true, crop_size: 224, image_mean: 0.5, image_std: 0.5 };
    expect(parsePreprocessorConfig({ ...base, image_processor_type: 'CLIPImageProcessor', size: 256 }, 'c.json')).to.deep.include({ resizeMode: 'shorter', resizeShorter: 256, resample: 'bicubic' });
    expect(parsePreprocessorConfig({ ...base, image_processor_type: 'ViTImageProcessor', size: 256 }, 'c.json')).to.deep.include({ resizeMode: 'exact', resizeWidth: 256, height: 224, resample: 'bilinear' });
  });

  it('SigLIP: exact size, bicubic, no crop; ConvNeXt: crop_pct below 384 px, a square resize from 384 on', async () => {
    expect(await readPreprocessorConfig(`${HUB}/siglip/preprocessor_config.json`)).to.deep.include({ resizeMode: 'exact', resizeWidth: 32, resizeHeight: 32, height: 32, width: 32, resample: 'bicubic' });
    expect(await readPreprocessorConfig(`${HUB}/convnext/preprocessor_config.json`)).to.deep.include({ resizeMode: 'shorter', resizeShorter: 36, height: 32, width: 32 });
    expect(parsePreprocessorConfig({ size: { shortest_edge: 384 }, crop_pct: 0.875, image_mean: 0.5, image_std: 0.5 }, 'c.json')).to.deep.include({ resizeMode: 'exact', resizeWidth: 384, height: 384 });
  });

  it('do_rescale and do_normalize false; do_resize false; longest_edge with a crop', () => {
    expect(parsePreprocessorConfig({ size: { height: 8, width: 8 }, do_rescale: false, do_normalize: false }, 'c.json')).to.deep.include({ rescale: 1, mean: [0, 0, 0], std: [1, 1, 1] });
    expect(parsePreprocessorConfig({ do_resize: false, crop_size: 8, image_mean: 0.5, image_std: 0.5 }, 'c.json')).to.deep.include({ resizeMode: 'none', height: 8, width: 8 });
    expect(parsePreprocessorConfig({ size: { longest_edge: 40 }, crop_size: 32, image_mean: 0.5, image_std: 0.5, resample: 1 }, 'c.json')).to.deep.include({ resizeMode: 'longer', resizeLonger: 40, height: 32, resample: 'lanczos' });
  });

  it('names the key and what was expected for bad values', async () => {
    await expectDmlError(() => parsePreprocessorConfig({ size: 8, resample: 4, image_mean: 0.5, image_std: 0.5 }, 'c.json'), 'E_ARG', 'c.json: "resample" is 4; expected 0 (nearest), 1 (lanczos), 2 (bilinear) or 3 (bicubic)');
    await expectDmlError(() => parsePreprocessorConfig({ size: 8, image_mean: [0.5, 0.5], image_std: 0.5 }, 'c.json'), 'E_ARG', 'c.json: "image_mean" is [0.5,0.5]; expected three numbers (one per RGB channel)');
    await expectDmlError(
      () => parsePreprocessorConfig({ size: { shortest_edge: 8 }, image_mean: 0.5, image_std: 0.5 }, 'c.json'),
      'E_ARG',
      'c.json: a shortest_edge resize without a centre crop (do_center_crop, crop_size) gives images of different sizes, which cannot be batched; expected a crop or a {"height", "width"} size',
    );
    // A value a float32 tensor cannot hold (image_std 1e308 divided every pixel down to 0: nothing trained).
    await expectDmlError(
      () => parsePreprocessorConfig({ size: 8, image_mean: 0.5, image_std: [0.5, 1e308, 0.5] }, 'c.json'),
      'E_ARG',
      'c.json: "image_std" is [0.5,1e+308,0.5]; expected three numbers, each a positive number of float32 range, in [1.2e-38, 3.4e38]',
    );
    await expectDmlError(() => parsePreprocessorConfig({ size: 8, rescale_factor: 0, image_mean: 0.5, image_std: 0.5 }, 'c.json'), 'E_ARG', 'c.json: "rescale_factor" is 0; expected a positive number of float32 range, in [1.2e-38, 3.4e38]');
    await expectDmlError(() => parsePreprocessorConfig({ size: 'big' }, 'c.json'), 'E_ARG', 'c.json: "size" is "big"; expected a number, {"shortest_edge"}, {"height", "width"} or {"longest_edge"}');
  });

  describe('files', () => {
    let dir: string;
    beforeEach(() => {
      dir = makeTempDir('dml-ppc-');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('is found beside the model, else in its parent folder (the Hub layout), else not at all', async () => {
      mkdirSync(path.join(dir, 'onnx'));
      expect(await findPreprocessorConfig(path.join(dir, 'onnx', 'model.onnx'))).to.equal(undefined);
      writeFileSync(path.join(dir, 'preprocessor_config.json'), '{}');
      expect(await findPreprocessorConfig(path.join(dir, 'onnx', 'model.onnx'))).to.equal(path.join(dir, 'preprocessor_config.json'));
      writeFileSync(path.join(dir, 'onnx', 'preprocessor_config.json'), '{}');
      expect(await findPreprocessorConfig(path.join(dir, 'onnx', 'model.onnx'))).to.equal(path.join(dir, 'onnx', 'preprocessor_config.json'));
    });

    it('invalid JSON and a missing file are one-line errors naming the file', async () => {
      const file = path.join(dir, 'p.json');
      writeFileSync(file, '{ nope');
      await expectDmlError(readPreprocessorConfig(file), 'E_ARG', new RegExp(`^${file} is not valid JSON: `));
      await expectDmlError(readPreprocessorConfig(path.join(dir, 'none.json')), 'E_NOT_FOUND', `Cannot read preprocessor config ${path.join(dir, 'none.json')}: no such file`);
    });
  });
});
