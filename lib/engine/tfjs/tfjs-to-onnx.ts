/**
 * @file TensorFlow.js layers model -> ONNX graph, by walking the model's layer graph.
 *
 * The walk starts at the model's output and follows each symbolic tensor to the layer call that made
 * it (`sourceLayer.inboundNodes[nodeIndex]`), converting calls in post-order, so functional models
 * with branches and merges (ResNet's Add, DenseNet's Concatenate), shared layers and nested models
 * (a Sequential or Functional model used as a layer, inlined under its name) all convert, not only
 * Sequential stacks. Each layer call goes to its converter in layer-converters.ts.
 *
 * Input and layout: an image model (rank-4 NHWC input in TensorFlow.js) gets one image input named
 * `image`, by default NCHW `[batch, C, H, W]` (the layout dmlkit's evaluator and most ONNX vision
 * models use). An NCHW input feeds the convolutions directly; transposes appear only where memory
 * order matters (Flatten, Reshape, Dense on feature maps) and, for an NHWC input, once before the
 * first convolution. A model on flattened images (an `mlp` trained on pixels) can be given the same
 * image input with {@link ConvertOptions.flatImage}: the graph flattens the image in NHWC order, as the
 * trainer did. Any other input is kept as it is (`features` [batch, D] for a head on features).
 * The batch axis is symbolic (`batch`) everywhere; the one output is named `embedding`.
 */
import * as tf from '@tensorflow/tfjs';
import { DmlError, invalidParameterError } from '../../errors.js';
import type { TensorLayout } from '../../image/preprocessing.js';
import { node, tensorValueInfo, type Dim, type NodeProto, type TensorProto, type ValueInfoProto } from '../../onnx/builder.js';
import { layerConverter, supportedLayerClasses, type ConvertedOutput } from './layer-converters.js';
import { GraphContext, type TensorValue, type WeightSource } from './onnx-graph.js';

/** Options of {@link convertLayersModel}. */
export interface ConvertOptions {
  /** Name of the ONNX input; default `image` for image inputs, else `features`. */
  inputName?: string;
  /** Name of the ONNX output; default `embedding`. */
  outputName?: string;
  /** Layout of an image input; default NCHW. */
  layout?: TensorLayout;
  /**
   * Give a rank-2 model (input [height x width x channels]) an image input of this size, flattened
   * in NHWC order inside the graph.
   */
  flatImage?: { height: number; width: number; channels: number };
}

/** The image behind an image input. */
export interface ImageInput {
  layout: TensorLayout;
  /** Null when the model leaves the size open. */
  height: number | null;
  width: number | null;
  channels: number;
}

/** A converted model: the graph parts for `encodeModel` (or composition) and its interface. */
export interface ConvertedModel {
  inputs: ValueInfoProto[];
  outputs: ValueInfoProto[];
  nodes: NodeProto[];
  initializers: TensorProto[];
  inputName: string;
  /** ONNX dims of the input (batch symbolic). */
  inputDims: Dim[];
  /** Set for an image input. */
  image: ImageInput | null;
  outputName: string;
  /** ONNX dims of the output (batch symbolic). */
  outputDims: Dim[];
  /** Layer calls converted (nested models count their layers). */
  layerCount: number;
  /** The TensorFlow.js weight behind each initializer made from one. */
  weightSources: ReadonlyMap<string, WeightSource>;
}

type SymbolicTensor = tf.SymbolicTensor;

const dimsOf = (shape: readonly (number | null)[], names: readonly string[]): Dim[] => shape.map((d, i) => d ?? (names[i] as string));

/** Walks `model` from its outputs with its inputs bound to `inputs`; `prefix` names values of nested models. */
function convertGraph(g: GraphContext, model: tf.LayersModel, inputs: readonly TensorValue[], prefix: string, counter: { layers: number }): TensorValue[] {
  const values = new Map<number, TensorValue>();
  model.inputs.forEach((t, i) => values.set(t.id, inputs[i] as TensorValue));
  const visit = (tensor: SymbolicTensor): TensorValue => {
    const known = values.get(tensor.id);
    if (known) return known;
    const layer = tensor.sourceLayer;
    const call = layer.inboundNodes[tensor.nodeIndex];
    if (layer.getClassName() === 'InputLayer' || call === undefined) {
      throw new DmlError('E_MODEL', `Cannot export ${model.name}: tensor ${tensor.name} comes from ${layer.name}, which is not an input of the model`);
    }
    const callInputs = call.inputTensors.map(visit);
    const name = `${prefix}${layer.name}`;
    let outputs: ConvertedOutput[];
    if (layer instanceof tf.LayersModel) {
      if (layer.inputs.length !== callInputs.length) {
        throw new DmlError('E_MODEL', `Cannot export nested model ${name}: it takes ${layer.inputs.length} inputs but is called with ${callInputs.length}`);
      }
      outputs = convertGraph(g, layer, callInputs, `${name}/`, counter);
    } else {
      const className = layer.getClassName();
      const converter = layerConverter(className);
      if (converter === undefined) {
        throw new DmlError('E_MODEL', `Cannot export layer ${name}: its class ${className} has no ONNX converter (supported: ${supportedLayerClasses().join(', ')})`);
      }
      outputs = converter(g, { layer, inputs: callInputs, outputShapes: call.outputTensors.map((t) => t.shape), name });
      counter.layers++;
    }
    call.outputTensors.forEach((t, i) => {
      const out = outputs[i];
      if (out === undefined) throw new DmlError('E_MODEL', `Cannot export layer ${name}: its converter returned ${outputs.length} outputs for ${call.outputTensors.length}`);
      values.set(t.id, { ...out, shape: t.shape });
    });
    return values.get(tensor.id) as TensorValue;
  };
  return model.outputs.map(visit);
}

/** Renames value `from` to `to` in every node (the value must be produced by a node). */
function renameValue(nodes: NodeProto[], from: string, to: string): void {
  for (const n of nodes) {
    n.input = n.input?.map((v) => (v === from ? to : v)) ?? [];
    n.output = n.output?.map((v) => (v === from ? to : v)) ?? [];
    if (n.name === from) n.name = to;
  }
}

/**
 * Converts `model` (one input, one output) to ONNX graph parts; see the file comment.
 * Errors: E_MODEL naming the layer and its class for a layer without a converter or a configuration
 * it cannot express, and for models with other than one float32 input and one output; E_ARG for bad options.
 */
export function convertLayersModel(model: tf.LayersModel, options: ConvertOptions = {}): ConvertedModel {
  if (!(model instanceof tf.LayersModel)) throw invalidParameterError('model', 'a tf.LayersModel', model);
  if (model.inputs.length !== 1 || model.outputs.length !== 1) {
    throw new DmlError('E_MODEL', `Cannot export ${model.name}: expected one input and one output but it has ${model.inputs.length} and ${model.outputs.length}`);
  }
  const layout = options.layout ?? 'NCHW';
  if (layout !== 'NCHW' && layout !== 'NHWC') throw invalidParameterError('layout', "'NCHW' or 'NHWC'", layout);
  const modelInput = model.inputs[0] as SymbolicTensor;
  if (modelInput.dtype !== 'float32') throw new DmlError('E_MODEL', `Cannot export ${model.name}: its input ${modelInput.name} is ${modelInput.dtype}; expected float32`);
  const shape = modelInput.shape;
  const g = new GraphContext();

  let image: ImageInput | null = null;
  if (shape.length === 4) {
    const [, height, width, channels] = shape as [null, number | null, number | null, number | null];
    if (channels === null) throw new DmlError('E_MODEL', `Cannot export ${model.name}: its image input ${modelInput.name} has no fixed channel count`);
    image = { layout, height, width, channels };
  } else if (options.flatImage !== undefined) {
    const { height, width, channels } = options.flatImage;
    const size = height * width * channels;
    if (shape.length !== 2 || shape[1] !== size) {
      throw invalidParameterError('flatImage', `an image of ${shape.length === 2 ? String(shape[1]) : 'rank-2 model input'} values for input [${shape.join(', ')}]`, `${height}x${width}x${channels}`);
    }
    image = { layout, height, width, channels };
  }

  const inputName = options.inputName ?? (image ? 'image' : 'features');
  const outputName = options.outputName ?? 'embedding';
  if (inputName === outputName || inputName.length === 0 || outputName.length === 0) {
    throw invalidParameterError('inputName/outputName', 'two different non-empty names', `${inputName}/${outputName}`);
  }
  g.reserve(inputName);
  g.reserve(outputName);
  let inputDims: Dim[];
  let bound: TensorValue;
  if (image) {
    const { height, width, channels } = image;
    const nhwcShape = [null, height, width, channels];
    const nhwcDims = dimsOf(nhwcShape, ['batch', 'height', 'width']);
    inputDims = layout === 'NCHW' ? [nhwcDims[0], nhwcDims[3], nhwcDims[1], nhwcDims[2]].map((d) => d as Dim) : nhwcDims;
    const imageValue: TensorValue = { name: inputName, shape: nhwcShape, nchw: layout === 'NCHW' };
    bound =
      shape.length === 4
        ? imageValue
        : { name: g.op('Flatten', [g.native(imageValue).name], `${inputName}/flat`, { axis: { i: 1 } }), shape, nchw: false };
  } else {
    inputDims = dimsOf(shape, ['batch', ...shape.map((_, i) => `${inputName}_dim${i}`)]);
    bound = { name: inputName, shape, nchw: false };
  }

  const counter = { layers: 0 };
  const [result] = convertGraph(g, model, [bound], '', counter) as [TensorValue];
  const output = g.native(result);
  if (g.nodes.some((n) => n.output?.includes(output.name)) && output.name !== inputName) {
    renameValue(g.nodes, output.name, outputName);
  } else {
    g.nodes.push(node('Identity', [output.name], [outputName]));
  }
  const outputDims = dimsOf(output.shape, ['batch', ...output.shape.map((_, i) => `${outputName}_dim${i}`)]);
  return {
    inputs: [tensorValueInfo(inputName, 'float32', inputDims)],
    outputs: [tensorValueInfo(outputName, 'float32', outputDims)],
    nodes: g.nodes,
    initializers: g.initializers,
    inputName,
    inputDims,
    image,
    outputName,
    outputDims,
    layerCount: counter.layers,
    weightSources: g.weightSources,
  };
}
