import { expect } from 'chai';
import { DmlError } from '../../lib/errors.js';
import sharp from 'sharp';
import { preprocessingOverrides } from '../../lib/cli/preprocessing-flags.js';
import { IMAGENET_MEAN, IMAGENET_STD, resolveModelSignature, type TensorInfo } from '../../lib/embed/model-signature.js';
import { loadImageBatch } from '../../lib/image/batch-loader.js';

const out = (shape: Array<number | string>): TensorInfo[] => [{ name: 'emb', type: 'float32', shape }];
const inp = (shape: Array<number | string>, type = 'float32'): TensorInfo[] => [{ name: 'x', type, shape }];

describe('resolveModelSignature', () => {
  it('infers NCHW, channels and size from the input, ImageNet defaults and the 0.875 crop', () => {
    const s = resolveModelSignature('m.onnx', inp(['batch', 3, 224, 224]), out(['batch', 512]), undefined, {});
    expect(s.fixedBatch).to.equal(null);
    expect(s.outputDim).to.equal(512);
    expect(s.preprocessing).to.deep.equal({
      height: 224,
      width: 224,
      resizeShorter: 256,
      channels: 3,
      layout: 'NCHW',
      mean: IMAGENET_MEAN,
      std: IMAGENET_STD,
    });
    expect(s.preprocessingSources).to.deep.include({ layout: 'model input', height: 'model input', mean: 'default', resizeShorter: 'default' });
  });

  it('infers NHWC with a fixed batch', () => {
    const s = resolveModelSignature('m.onnx', inp([2, 32, 48, 1]), out([2, 16]), undefined, {});
    expect(s.fixedBatch).to.equal(2);
    expect(s.preprocessing).to.include({ layout: 'NHWC', channels: 1, height: 32, width: 48 });
    expect(s.preprocessing.mean).to.deep.equal([0]);
  });

  it('takes metadata over the declared shape and overrides over metadata', () => {
    const meta = { resizeShorter: 40, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };
    const s = resolveModelSignature('m.onnx', inp(['n', 3, 'h', 'w']), out(['n', 8]), meta, { height: 36, width: 36, mean: [0, 0, 0] });
    expect(s.preprocessing).to.deep.include({ height: 36, width: 36, resizeShorter: 40, mean: [0, 0, 0], std: [0.5, 0.5, 0.5] });
    expect(s.preprocessingSources).to.deep.include({ height: 'override', resizeShorter: 'metadata', mean: 'override', std: 'metadata' });
  });

  it('uses 224 for dynamic spatial dims without metadata', () => {
    const s = resolveModelSignature('m.onnx', inp(['n', 3, 'h', 'w']), out(['n', 8]), undefined, {});
    expect(s.preprocessing).to.include({ height: 224, width: 224, resizeShorter: 256 });
  });

  const rejects = (fn: () => unknown, pattern: RegExp | string): void => {
    expect(fn).to.throw(DmlError, pattern);
  };

  it('rejects unsupported signatures with one clear message', () => {
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8], 'uint8'), out(['n', 4]), undefined, {}), /m\.onnx: input "x" has type uint8; expected float32 or float16/);
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 784]), out(['n', 4]), undefined, {}), /expected rank 4/);
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out(['n', 4, 1, 1]), undefined, {}), /output "emb" has shape \[n, 4, 1, 1\]; expected \[N, D\]/);
    rejects(
      () => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out(['n', 5, 4]), undefined, {}),
      'm.onnx: output "emb" has shape [n, 5, 4]; expected [N, D] embeddings; it holds one vector per token: pass --pooling cls|mean|max (option pooling) to pool it',
    );
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out(['n', 4]), undefined, { pooling: 'cls' }), 'm.onnx: --pooling cls needs a token output [N, T, D] but output "emb" has shape [n, 4]');
    // An undeclared rank (shape []) passes; OnnxEmbedder.open runs the model to find the real shape.
    expect(resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out([]), undefined, {})).to.deep.include({ outputName: 'emb', outputDim: null });
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 5, 8, 7]), out(['n', 4]), undefined, {}), /cannot tell the layout/);
    rejects(() => resolveModelSignature('m.onnx', [...inp(['n', 3, 8, 8]), ...inp(['n', 3, 8, 8])], out(['n', 4]), undefined, {}), /exactly one image input/);
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out(['n', 4]), undefined, { height: 9 }), /height 9 requested but input "x" takes 8/);
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 3, 8, 8]), out(['n', 4]), undefined, { outputName: 'nope' }), /no output named "nope"/);
  });

  const hub = (...names: Array<[string, Array<number | string>]>): TensorInfo[] => names.map(([name, shape]) => ({ name, type: 'float32', shape }));
  const pixels = inp(['batch_size', 'num_channels', 'height', 'width']);

  it('prefers a 2-D output named like an embedding over a first token output, and takes NCHW from channel dim names', () => {
    const vit = hub(['last_hidden_state', ['batch_size', 197, 192]], ['pooler_output', ['batch_size', 192]]);
    const s = resolveModelSignature('vit.onnx', pixels, vit, undefined, {});
    expect(s).to.deep.include({ outputName: 'pooler_output', outputDim: 192, pooling: null, inputType: 'float32' });
    expect(s.preprocessing.layout).to.equal('NCHW');
    expect(s.preprocessingSources.layout).to.equal('model input');
    // image_embeds is preferred over pooler_output (CLIP's vision model with projection has both)
    const clip = hub(['last_hidden_state', ['b', 50, 64]], ['pooler_output', ['b', 64]], ['image_embeds', ['b', 32]]);
    expect(resolveModelSignature('clip.onnx', pixels, clip, undefined, {}).outputName).to.equal('image_embeds');
    // a 3-D output named like an embedding is not taken
    expect(resolveModelSignature('x.onnx', pixels, hub(['y', ['b', 4]], ['embeddings', ['b', 3, 4]]), undefined, {}).outputName).to.equal('y');
  });

  it('pools a token output: --pooling picks the first [N, T, D] output, D from its last dim', () => {
    const vit = hub(['last_hidden_state', ['batch_size', 197, 192]], ['pooler_output', ['batch_size', 192]]);
    expect(resolveModelSignature('vit.onnx', pixels, vit, undefined, { pooling: 'mean' })).to.deep.include({ outputName: 'last_hidden_state', pooling: 'mean', outputDim: 192 });
    rejects(
      () => resolveModelSignature('vit.onnx', pixels, hub(['last_hidden_state', ['b', 197, 192]], ['other', ['b', 192]]), undefined, {}),
      'vit.onnx: output "last_hidden_state" has shape [b, 197, 192]; expected [N, D] embeddings; it holds one vector per token: pass --pooling cls|mean|max (option pooling) to pool it, or --output-name <a 2-D output>',
    );
  });

  it('channel dim names decide the layout only when every dim is symbolic; NHWC when the last one is named', () => {
    expect(resolveModelSignature('k.onnx', inp(['N', 'H', 'W', 'C']), out(['N', 8]), undefined, {}).preprocessing.layout).to.equal('NHWC');
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 'channels', 224, 'w']), out(['n', 4]), undefined, {}), /cannot tell the layout/);
    rejects(() => resolveModelSignature('m.onnx', inp(['n', 'a', 'b', 'c2']), out(['n', 4]), undefined, {}), /cannot tell the layout/);
  });

  it('accepts float16 inputs and outputs (cast by the session runner)', () => {
    const s = resolveModelSignature('fp16.onnx', inp(['n', 3, 8, 8], 'float16'), [{ name: 'e', type: 'float16', shape: ['n', 4] }], undefined, {});
    expect(s.inputType).to.equal('float16');
  });

  it('--stretch (resizeMode exact without a size) resizes to the input size, aspect not kept, nothing cropped', async () => {
    const s = resolveModelSignature('k.onnx', inp([1, 32, 48, 3]), out([1, 8]), undefined, preprocessingOverrides({ stretch: true }));
    expect(s.preprocessing).to.include({ resizeMode: 'exact', resizeWidth: 48, resizeHeight: 32, height: 32, width: 48 });
    expect(s.preprocessingSources).to.include({ resizeMode: 'override', resizeWidth: 'override', resizeHeight: 'override' });
    // A 90 x 60 image becomes 48 x 32 whole: its left and right edges are in the output (a centre crop would cut them).
    const batch = await loadImageBatch([{ kind: 'file', path: 'spec/fixtures/hub/images/a/wide.png' }], { ...s.preprocessing, mean: [0, 0, 0], std: [1, 1, 1] });
    const reference = await sharp('spec/fixtures/hub/images/a/wide.png').resize(48, 32, { fit: 'fill', kernel: 'linear' }).raw().toBuffer();
    let worst = 0;
    reference.forEach((v, i) => (worst = Math.max(worst, Math.abs((batch.data[i] as number) - v / 255))));
    expect(worst).to.be.below(1.5 / 255);
    expect(() => preprocessingOverrides({ stretch: true, resize: '40' })).to.throw('--resize 40 and --stretch: give one (--stretch resizes to the input size itself)');
  });
});
