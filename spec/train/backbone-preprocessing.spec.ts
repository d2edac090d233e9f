/**
 * The training images' preprocessing of a `model.kind: "onnx"` run (lib/train/backbone-preprocessing.ts):
 * each field from data.image, else the backbone's preprocessor_config.json, else its dml.preprocessing
 * metadata, else its input's fixed size, else dmlkit's defaults, as `dml eval` resolves them.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { encodeModel, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { IMAGENET_MEAN, IMAGENET_STD } from '../../lib/embed/model-signature.js';
import { backboneImageSpec } from '../../lib/train/backbone-preprocessing.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';

/** A backbone with input [batch, 3, `height`, `width`] (numbers fixed, strings symbolic) and `metadata`. */
function backbone(height: number | string, width: number | string, metadata: Record<string, string> = {}): Uint8Array {
  return encodeModel({
    graphName: 'backbone',
    inputs: [tensorValueInfo('pixel_values', 'float32', ['batch', 3, height, width])],
    outputs: [tensorValueInfo('features', 'float32', ['batch', 3, 1, 1])],
    nodes: [node('GlobalAveragePool', ['pixel_values'], ['features'])],
    metadata,
  });
}

describe('backboneImageSpec', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dml-backbone-pre-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads a Hub model's preprocessor_config.json from the folder above onnx/model.onnx; data.image's fields override it", async () => {
    const root = path.join(dir, 'hub');
    mkdirSync(path.join(root, 'onnx'), { recursive: true });
    const modelPath = path.join(root, 'onnx', 'model.onnx');
    const bytes = backbone('height', 'width');
    writeFileSync(modelPath, bytes);
    writeFileSync(
      path.join(root, 'preprocessor_config.json'),
      JSON.stringify({ image_processor_type: 'BitImageProcessor', do_resize: true, size: { shortest_edge: 40 }, do_center_crop: true, crop_size: { height: 32, width: 32 }, resample: 3, image_mean: [0.5, 0.5, 0.5], image_std: [0.25, 0.25, 0.25] }),
    );
    const resolved = await backboneImageSpec(modelPath, bytes, { std: [1, 1, 1] }, undefined);
    expect(resolved.preprocessorConfig).to.equal(path.join(root, 'preprocessor_config.json'));
    expect(resolved.image).to.deep.equal({ height: 32, width: 32, channels: 3, resizeShorter: 40, mean: [0.5, 0.5, 0.5], std: [1, 1, 1], resizeMode: 'shorter', resample: 'bicubic', cropRounding: 'floor', rescale: 1 / 255 });
    expect(resolved.sources).to.include({ height: 'preprocessor config', resizeShorter: 'preprocessor config', mean: 'preprocessor config', std: 'override', resample: 'preprocessor config' });
    expect(resolved.sources).to.not.have.property('layout');
    expect(resolved.defaultsUsed).to.deep.equal([]);
    // `false`: the file is not read; nothing else gives the values, so dmlkit's defaults fill them.
    const ignored = await backboneImageSpec(modelPath, bytes, undefined, false);
    expect(ignored.image).to.deep.equal({ height: 224, width: 224, channels: 3, resizeShorter: 256, mean: IMAGENET_MEAN, std: IMAGENET_STD });
    expect(ignored.defaultsUsed).to.deep.equal(['input size 224x224', 'shorter side resized to 256 before the centre crop', 'ImageNet mean [0.485, 0.456, 0.406] and std [0.229, 0.224, 0.225]']);
  });

  it("takes the backbone's dml.preprocessing metadata, then its input's fixed size", async () => {
    const modelPath = path.join(dir, 'exported.onnx');
    const withMetadata = backbone(48, 48, { 'dml.preprocessing': JSON.stringify({ height: 48, width: 48, resizeShorter: 54, channels: 3, layout: 'NCHW', mean: [0.1, 0.2, 0.3], std: [0.4, 0.5, 0.6] }) });
    const fromMetadata = await backboneImageSpec(modelPath, withMetadata, undefined, false);
    expect(fromMetadata.image).to.deep.equal({ height: 48, width: 48, channels: 3, resizeShorter: 54, mean: [0.1, 0.2, 0.3], std: [0.4, 0.5, 0.6] });
    expect(fromMetadata.sources).to.include({ height: 'metadata', resizeShorter: 'metadata', mean: 'metadata' });
    const fixed = await backboneImageSpec(modelPath, backbone(64, 96), { mean: [0, 0, 0], std: [1, 1, 1] }, false);
    expect(fixed.image).to.deep.equal({ height: 64, width: 96, channels: 3, resizeShorter: 110, mean: [0, 0, 0], std: [1, 1, 1] });
    expect(fixed.sources).to.include({ height: 'model input', width: 'model input', resizeShorter: 'default' });
    expect(fixed.defaultsUsed).to.deep.equal(['shorter side resized to 110 before the centre crop']);
  });

  it('refuses a size the backbone cannot take, a missing preprocessor config, and a backbone that is not an image model', async () => {
    const fixture = fileURLToPath(new URL('../fixtures/graph-trainer/resnet-triplet/initial.onnx', import.meta.url));
    const copy = path.join(dir, 'resnet.onnx');
    copyFileSync(fixture, copy);
    const bytes = new Uint8Array(readFileSync(copy));
    await expectDmlError(backboneImageSpec(copy, bytes, { height: 32 }, false), 'E_ARG', /resnet\.onnx: height 32 requested but input "input" takes 16/);
    await expectDmlError(backboneImageSpec(copy, bytes, undefined, path.join(dir, 'absent.json')), 'E_NOT_FOUND', /Cannot read preprocessor config .*absent\.json: no such file/);
    const flat = encodeModel({ graphName: 'flat', inputs: [tensorValueInfo('x', 'float32', ['batch', 8])], outputs: [tensorValueInfo('y', 'float32', ['batch', 8])], nodes: [node('Relu', ['x'], ['y'])] });
    await expectDmlError(backboneImageSpec('flat.onnx', flat, undefined, false), 'E_MODEL', /flat\.onnx: input x has shape \[batch, 8\]; expected an NCHW image batch/);
  });
});
