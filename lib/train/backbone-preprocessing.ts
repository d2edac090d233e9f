/**
 * @file The training images' preprocessing of a `model.kind: "onnx"` run, from the backbone as
 * `dml eval` reads it: each field of `data.image` left out comes from the backbone's Hugging Face
 * `preprocessor_config.json` (`model.preprocessorConfig`, else one beside the model or in its parent
 * folder), else its `dml.preprocessing` metadata, else its input's fixed size, else dmlkit's defaults
 * (224 px, shorter side to size / 0.875, ImageNet statistics): a pretrained backbone is fine-tuned on
 * the images it was trained on, and the exported network carries that preprocessing to `dml eval` and
 * `dml serve`. The result is a complete `data.image`, recorded in the run's config.json.
 */
import { parseDmlMetadata } from '../onnx/dml-metadata.js';
import { preprocessingDefaultsUsed, resolveImagePreprocessing, type PreprocessingSources } from '../embed/model-signature.js';
import { findPreprocessorConfig, readPreprocessorConfig } from '../image/preprocessor-config.js';
import type { Preprocessing } from '../image/preprocessing.js';
import { DmlError } from '../errors.js';
import { readOnnxGraph } from '../engine/graph/onnx-ir.js';
import { definedFields } from '../util/defined-fields.js';
import type { TrainingImageSpec } from './training-data.js';

/** What {@link backboneImageSpec} resolved. */
export interface BackboneImageSpec {
  /** `data.image` with every field the preprocessing has. */
  readonly image: TrainingImageSpec;
  /** Where each field came from (`override` for a field `data.image` gave). */
  readonly sources: PreprocessingSources;
  /** The preprocessor config read, if any. */
  readonly preprocessorConfig?: string;
  /** The defaults used, in words (empty when the backbone or `data.image` gave everything). */
  readonly defaultsUsed: readonly string[];
}

/**
 * The training images' preprocessing for the ONNX backbone `bytes` (read from `modelPath`; its one
 * image input NCHW), `image` (the config's `data.image`) overriding it field by field.
 * `preprocessorConfig`: a `preprocessor_config.json` to read, `false` for none, undefined to look
 * beside the model. Errors: E_MODEL for a backbone without one float image input of rank 4, and those
 * of reading the preprocessor config; E_ARG for a size that contradicts the backbone's fixed input.
 */
export async function backboneImageSpec(
  modelPath: string,
  bytes: Uint8Array,
  image: TrainingImageSpec | undefined,
  preprocessorConfig: string | false | undefined,
): Promise<BackboneImageSpec> {
  const graph = readOnnxGraph(bytes, modelPath);
  const [input, ...others] = graph.inputs;
  if (!input || others.length > 0) throw new DmlError('E_MODEL', `${modelPath} has ${graph.inputs.length} data inputs; expected one image input`);
  if (input.dims.length !== 4) throw new DmlError('E_MODEL', `${modelPath}: input ${input.name} has shape [${input.dims.join(', ')}]; expected an NCHW image batch`);
  const configPath = preprocessorConfig === false ? undefined : (preprocessorConfig ?? (await findPreprocessorConfig(modelPath)));
  const config = configPath !== undefined ? await readPreprocessorConfig(configPath) : undefined;
  const metadata = parseDmlMetadata(Object.fromEntries(graph.metadata), modelPath).preprocessing;
  const overrides: Partial<Preprocessing> = definedFields({ ...image, layout: 'NCHW' as const }) as Partial<Preprocessing>;
  const { preprocessing, sources } = resolveImagePreprocessing(modelPath, { name: input.name, type: input.type, shape: [...input.dims] }, metadata, overrides, config);
  const { layout: _layout, ...fields } = preprocessing;
  return {
    image: fields,
    sources: Object.fromEntries(Object.entries(sources).filter(([key]) => key !== 'layout')),
    ...(configPath !== undefined ? { preprocessorConfig: configPath } : {}),
    defaultsUsed: preprocessingDefaultsUsed(preprocessing, sources),
  };
}
