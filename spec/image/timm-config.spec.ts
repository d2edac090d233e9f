/**
 * @file timm's `config.json` (`pretrained_cfg`) read like a `preprocessor_config.json`
 * (lib/image/preprocessor-config.ts): the preprocessing of a `center` and a `squash` config equals
 * timm's eval transform written out with torchvision and Pillow (scripts/reference/timm_eval_transform.py,
 * spec/fixtures/hub/timm) on the hub fixture images of several sizes; the file is found beside a model
 * (a transformers `config.json` is passed over); unsupported settings are one line naming the key.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadImageBatch } from '../../lib/image/batch-loader.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { findPreprocessorConfig, parseTimmConfig, readPreprocessorConfig } from '../../lib/image/preprocessor-config.js';
import { makeTempDir } from './image-fixtures.js';

interface Case {
  config: string;
  image: string;
  shape: [number, number, number];
  values: number[];
}
const HUB = 'spec/fixtures/hub';
const reference = JSON.parse(readFileSync(path.join(HUB, 'timm/reference.json'), 'utf8')) as { cases: Case[] };

describe('timm config.json', () => {
  it('reads pretrained_cfg as timm\'s eval transform: center (shorter side to floor(size / crop_pct), crop) and squash', async () => {
    expect(await readPreprocessorConfig(path.join(HUB, 'timm/center/config.json'))).to.deep.equal({
      channels: 3, height: 32, width: 32, resample: 'bicubic', cropRounding: 'round', rescale: 1 / 255, resizeMode: 'shorter', resizeShorter: 35, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225],
    });
    expect(await readPreprocessorConfig(path.join(HUB, 'timm/squash/config.json'))).to.include({ resizeMode: 'exact', resizeHeight: 30, resizeWidth: 40, height: 24, width: 32, resample: 'bilinear' });
  });

  it('gives the pixels timm gives, on images larger and smaller than the input', async () => {
    expect(reference.cases).to.have.length(12);
    for (const c of reference.cases) {
      const fields = await readPreprocessorConfig(path.join(HUB, 'timm', c.config, 'config.json'));
      const preprocessing = { layout: 'NCHW', ...fields } as Preprocessing;
      const batch = await loadImageBatch([{ kind: 'file', path: path.join(HUB, 'images', c.image) }], preprocessing);
      expect(batch.shape.slice(1), `${c.config} ${c.image}`).to.deep.equal(c.shape);
      let worst = 0;
      c.values.forEach((v, i) => (worst = Math.max(worst, Math.abs((batch.data[i] as number) - v))));
      expect(worst, `${c.config} ${c.image}`).to.be.below(1e-5);
    }
  });

  it('is found beside the model or in its parent folder, after a preprocessor_config.json; a transformers config.json is passed over', async () => {
    const dir = makeTempDir('dml-timm-');
    try {
      mkdirSync(path.join(dir, 'onnx'));
      const model = path.join(dir, 'onnx', 'model.onnx');
      writeFileSync(path.join(dir, 'onnx', 'config.json'), JSON.stringify({ model_type: 'vit', hidden_size: 32 }));
      expect(await findPreprocessorConfig(model)).to.equal(undefined);
      writeFileSync(path.join(dir, 'config.json'), readFileSync(path.join(HUB, 'timm/center/config.json')));
      expect(await findPreprocessorConfig(model)).to.equal(path.join(dir, 'config.json'));
      writeFileSync(path.join(dir, 'preprocessor_config.json'), '{}');
      expect(await findPreprocessorConfig(model)).to.equal(path.join(dir, 'preprocessor_config.json'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what timm does otherwise, naming the key', () => {
    const cfg = (extra: Record<string, unknown>) => ({ pretrained_cfg: { input_size: [3, 32, 32], interpolation: 'bicubic', ...extra } });
    expect(() => parseTimmConfig(cfg({ crop_mode: 'border' }), 'c.json')).to.throw('c.json: pretrained_cfg "crop_mode" is "border"; expected "center" or "squash"');
    expect(() => parseTimmConfig(cfg({ input_size: [3, 24, 32] }), 'c.json')).to.throw(/a square input for crop_mode "center"/);
    expect(() => parseTimmConfig(cfg({ interpolation: 'random' }), 'c.json')).to.throw('c.json: pretrained_cfg "interpolation" is "random"; expected nearest, bilinear, bicubic or lanczos');
    expect(parseTimmConfig({ input_size: [1, 28, 28], mean: [0.5], std: [0.5] }, 'old.json')).to.include({ channels: 1, resizeShorter: 32, resample: 'bilinear' });
  });
});
