/**
 * @file Tests of models with external data files: the locations are found in the graph, the model's
 * identity covers the data files (so the embedding cache tells two such models apart), a missing or
 * misplaced data file is one clear error, the model loads by path from any working directory, and a
 * copy carries its data files along.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { OnnxEmbedder } from '../../lib/embed/embedder.js';
import { embeddingCacheKey } from '../../lib/embed/cache.js';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { readExternalDataLocations, readExternalDataRanges } from '../../lib/onnx/metadata.js';
import { copyModelFiles, modelIdentity, readModelFiles } from '../../lib/onnx/model-files.js';
import { canonicalJson, sha256 } from '../../lib/util/hash.js';
import { externalWeights, writeExternalDataModel } from '../helpers/external-data-model.js';
import { expectDmlError } from '../helpers/expect-dml-error.js';
import { makeTempDir } from '../image/image-fixtures.js';

describe('onnx/model-files (external data)', () => {
  let dir: string;
  beforeEach(() => {
    dir = makeTempDir('dml-external-');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the external data locations of a graph, and none in a self-contained model', () => {
    const model = writeExternalDataModel(dir, 1, 'm.onnx', 'weights/m.bin');
    expect(readExternalDataLocations(readFileSync(model))).to.deep.equal(['weights/m.bin']);
    const plain = encodeModel({
      graphName: 'plain',
      inputs: [tensorValueInfo('x', 'float32', ['b', 2])],
      outputs: [tensorValueInfo('y', 'float32', ['b', 2])],
      initializers: [floatTensor('w', [2, 2], [1, 0, 0, 1])],
      nodes: [node('MatMul', ['x', 'w'], ['y'])],
    });
    expect(readExternalDataLocations(plain)).to.deep.equal([]);
  });

  it('refuses a location outside the model folder', async () => {
    mkdirSync(path.join(dir, 'sub'));
    const model = writeExternalDataModel(path.join(dir, 'sub'), 1, 'm.onnx', '../escape.bin');
    await expectDmlError(readModelFiles(model), 'E_MODEL', `${model}: external data location "../escape.bin" is not a path inside the model's folder; expected a relative file name such as "model.onnx_data"`);
  });

  it("identity = sha256 of {model, externalData}; changing only the data file changes it", async () => {
    const model = writeExternalDataModel(dir, 1);
    const first = await readModelFiles(model);
    const dataSha = sha256(new Uint8Array(externalWeights(1).buffer));
    expect(first.externalData).to.deep.equal([{ location: 'model.onnx_data', sha256: dataSha }]);
    expect(first.sha256).to.equal(sha256(canonicalJson({ model: sha256(readFileSync(model)), externalData: [{ location: 'model.onnx_data', sha256: dataSha }] })));
    expect(modelIdentity('ab', [])).to.equal('ab');
    writeFileSync(path.join(dir, 'model.onnx_data'), new Uint8Array(externalWeights(2).buffer));
    const second = await readModelFiles(model);
    expect(sha256(second.bytes)).to.equal(sha256(first.bytes));
    expect(second.sha256).not.to.equal(first.sha256);
  });

  it('names a missing data file and where it was expected', async () => {
    const model = writeExternalDataModel(dir, 1);
    rmSync(path.join(dir, 'model.onnx_data'));
    await expectDmlError(
      OnnxEmbedder.open(model, { device: 'cpu' }),
      'E_NOT_FOUND',
      `${model} keeps weights in external data file "model.onnx_data", which is missing (expected ${path.join(dir, 'model.onnx_data')}, beside the model)`,
    );
  });

  it("names a data file that does not belong to the model (another model's, shorter) as the culprit, with the tensor that does not fit", async () => {
    const model = writeExternalDataModel(dir, 1);
    const ranges = readExternalDataRanges(readFileSync(model));
    expect(ranges).to.deep.equal([{ tensor: 'w', location: 'model.onnx_data', offset: 0, length: 784 * 8 * 4 }]);
    // Another model's data file under the same name: a 784 x 4 weight where this model reads 784 x 8.
    writeFileSync(path.join(dir, 'model.onnx_data'), new Uint8Array(externalWeights(2).buffer, 0, 784 * 4 * 4));
    await expectDmlError(
      OnnxEmbedder.open(model, { device: 'cpu' }),
      'E_MODEL',
      `${model}: its external data file "model.onnx_data" (${path.join(dir, 'model.onnx_data')}) does not belong to it: tensor "w" is at bytes 0-25088 but the file holds 12544 bytes (another model's data file under that name, or a cut-short copy); put the data file exported with this model beside it`,
    );
  });

  it("loads by path, from outside the model's folder; two models differing only in their data files get different cache keys and embeddings", async () => {
    const a = writeExternalDataModel(path.join(dir), 1);
    mkdirSync(path.join(dir, 'b'));
    const b = writeExternalDataModel(path.join(dir, 'b'), 2);
    expect(readFileSync(a)).to.deep.equal(readFileSync(b));
    const ea = await OnnxEmbedder.open(a, { device: 'cpu', inferenceThread: false });
    const eb = await OnnxEmbedder.open(b, { device: 'cpu' });
    try {
      expect(ea.warnings).to.deep.equal([]);
      expect(embeddingCacheKey(ea, 'm', false)).not.to.equal(embeddingCacheKey(eb, 'm', false));
      expect(ea.modelSha256).not.to.equal(eb.modelSha256);
      const input = Float32Array.from({ length: 784 }, (_, i) => (i % 7) / 7);
      const [va, vb] = [await ea.embedTensor(input, 1), await eb.embedTensor(input, 1)];
      // The first model's output, computed here: x W, L2-normalised.
      const w = externalWeights(1);
      const expected = Array.from({ length: 8 }, (_, j) => input.reduce((s, x, i) => s + x * (w[i * 8 + j] as number), 0));
      const norm = Math.hypot(...expected);
      expected.forEach((v, j) => expect(va[j]).to.be.closeTo(v / norm, 1e-5));
      expect(Array.from(va)).not.to.deep.equal(Array.from(vb));
    } finally {
      await Promise.all([ea.release(), eb.release()]);
    }
  });

  it('copies the model with its data files under their locations, keeping its identity', async () => {
    const model = writeExternalDataModel(dir, 3, 'src.onnx', 'weights/src.bin');
    mkdirSync(path.join(dir, 'copy'));
    const copied = await copyModelFiles(model, path.join(dir, 'copy', 'model.onnx'));
    expect(copied).to.deep.equal([path.join(dir, 'copy', 'model.onnx'), path.join(dir, 'copy', 'weights', 'src.bin')]);
    expect((await readModelFiles(copied[0] as string)).sha256).to.equal((await readModelFiles(model)).sha256);
  });

  it('refuses to copy a model whose data file would take the copy\'s own name (the copy would be overwritten by its weights)', async () => {
    const model = writeExternalDataModel(dir, 3, 'src.onnx', 'model.onnx');
    const target = path.join(dir, 'copy', 'model.onnx');
    mkdirSync(path.join(dir, 'copy'));
    await expectDmlError(
      copyModelFiles(model, target),
      'E_MODEL',
      `${model} keeps weights in external data file "model.onnx", the name its copy ${target} takes; rename the data file (and its location in the model)`,
    );
    expect(readdirSync(path.join(dir, 'copy'))).to.deep.equal([]);
  });
});
