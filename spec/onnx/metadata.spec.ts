/**
 * @file Tests of the ModelProto header / metadata_props reader against models written by the builder
 * and by onnx-proto directly, and against malformed bytes.
 */
import { expect } from 'chai';
import onnxProto from 'onnx-proto';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';
import { readModelMetadata } from '../../lib/onnx/metadata.js';
import { DmlError } from '../../lib/errors.js';
import { Rng } from '../../lib/util/rng.js';

const { onnx } = onnxProto;

function reluModel(metadata?: Record<string, string>, weights = 0): Uint8Array {
  return encodeModel({
    graphName: 'relu',
    inputs: [tensorValueInfo('x', 'float32', ['batch', 3])],
    outputs: [tensorValueInfo('y', 'float32', ['batch', 3])],
    initializers: weights > 0 ? [floatTensor('unused', [weights], new Float32Array(weights).fill(1.5))] : [],
    nodes: [node('Relu', ['x'], ['y'])],
    producerVersion: '1.2.3',
    ...(metadata !== undefined ? { metadata } : {}),
  });
}

function expectModelError(bytes: Uint8Array, pattern: RegExp): void {
  try {
    readModelMetadata(bytes);
  } catch (err) {
    expect(err).to.be.instanceOf(DmlError);
    expect((err as DmlError).code).to.equal('E_MODEL');
    expect((err as DmlError).message).to.match(pattern);
    return;
  }
  expect.fail('expected an E_MODEL DmlError');
}

describe('onnx/metadata', () => {
  it('round-trips metadata props (unicode, empty and JSON values) with the header fields', () => {
    const props = {
      'dml.embedding_dim': '512',
      'dml.preprocessing': JSON.stringify({ size: 224, mean: [0.485, 0.456, 0.406] }),
      empty: '',
      'ünïcødé ключ': 'värde ✓',
    };
    const meta = readModelMetadata(reluModel(props, 4096));
    expect(meta).to.deep.equal({
      irVersion: 8,
      producerName: 'dmlkit',
      producerVersion: '1.2.3',
      opsetVersion: 17,
      metadataProps: props,
    });
  });

  it('returns an empty record for a model without props', () => {
    const meta = readModelMetadata(reluModel());
    expect(meta.metadataProps).to.deep.equal({});
    expect(meta.irVersion).to.equal(8);
  });

  it('agrees with a full onnx-proto decode on a model with several opsets, a repeated key and unknown fields', () => {
    const model = onnx.ModelProto.create({
      irVersion: 7,
      producerName: 'pytorch',
      producerVersion: '2.1.0',
      domain: 'ai.example',
      modelVersion: 3,
      docString: 'doc',
      opsetImport: [
        { domain: 'com.microsoft', version: 1 },
        { domain: 'ai.onnx', version: 13 },
      ],
      graph: { name: 'g', node: [{ opType: 'Relu', input: ['x'], output: ['y'] }] },
      metadataProps: [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'a', value: '3' },
      ],
    });
    const encoded = onnx.ModelProto.encode(model).finish();
    // Unknown field 99 of each skippable wire type: varint, fixed64, length-delimited, fixed32.
    const unknown = Uint8Array.from([
      ...[0x98, 0x06, 0x96, 0x01],
      ...[0x99, 0x06, 1, 2, 3, 4, 5, 6, 7, 8],
      ...[0x9a, 0x06, 3, 0xff, 0xfe, 0xfd],
      ...[0x9d, 0x06, 9, 9, 9, 9],
    ]);
    const bytes = new Uint8Array(encoded.length + unknown.length);
    bytes.set(encoded);
    bytes.set(unknown, encoded.length);
    const meta = readModelMetadata(bytes);
    expect(meta).to.deep.equal({
      irVersion: 7,
      producerName: 'pytorch',
      producerVersion: '2.1.0',
      opsetVersion: 13,
      metadataProps: { a: '3', b: '2' },
    });
  });

  it('leaves opsetVersion out when only other domains are imported', () => {
    const model = onnx.ModelProto.encode({
      irVersion: 8,
      opsetImport: [{ domain: 'com.microsoft', version: 1 }],
      graph: { name: 'g' },
    }).finish();
    const meta = readModelMetadata(model);
    expect(meta).to.not.have.property('opsetVersion');
    expect(meta.producerName).to.equal('');
  });

  it('rejects garbage, truncated and empty bytes with E_MODEL naming the problem', () => {
    const rng = new Rng(5);
    const garbage = Uint8Array.from({ length: 256 }, () => rng.nextInt(256));
    expectModelError(garbage, /^Malformed ONNX model: .+ at byte \d+$/);
    expectModelError(new TextEncoder().encode('this is not an ONNX model\n'), /^Malformed ONNX model: /);
    const model = reluModel({ key: 'value' }, 64);
    expectModelError(model.subarray(0, model.length - 3), /running past the end|truncated/);
    expectModelError(new Uint8Array(0), /no ir_version field/);
    expectModelError(Uint8Array.from([0x08, 0x80]), /truncated varint in ModelProto at byte 2/);
    expectModelError(Uint8Array.from([0x08, 0x08, 0x9b, 0x06]), /unsupported wire type 3/);
    expectModelError(Uint8Array.from([0x0a, 0x00]), /field 1 has wire type 2; expected 0/);
    expectModelError(Uint8Array.from([0x08, 0x08]), /no graph field/);
    expectModelError(Uint8Array.from([0x08, 0x08, 0x3a, 0x00, 0x12, 0x02, 0xc3, 0x28]), /invalid UTF-8 in producer_name/);
  });
});
