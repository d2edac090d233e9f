/**
 * @file `dmlkit/export`: trained TensorFlow.js embedders to ONNX, checked against TensorFlow.js.
 * Loads TensorFlow.js.
 *
 * @module dmlkit/export
 */
export { exportEmbedder, exportCheckpoint, type EmbedderExportOptions, type ExportedEmbedder, type CheckpointExportOptions, type CheckpointExport } from './export/export-model.js';
export { convertLayersModel, type ConvertOptions, type ConvertedModel, type ImageInput } from './engine/tfjs/tfjs-to-onnx.js';
export type { AttributeValue, Dim, OperatorSetId } from './onnx/builder.js';
export type { GraphContext, TensorValue, WeightSource } from './engine/tfjs/onnx-graph.js';
export type { GraphBuilder } from './engine/graph/graph-builder.js';
export { composeBackboneAndHead, type ComposeOptions, type ComposedModel } from './export/compose.js';
export { registerLayerConverter, supportedLayerClasses, type ConvertedOutput, type LayerCall, type LayerConverter } from './engine/tfjs/layer-converters.js';
export { PARITY_TOLERANCE, type ParityReport } from './export/parity.js';
