/**
 * @file Working out how to feed an image embedder from what the ONNX model declares.
 *
 * Inputs considered, in order of precedence: explicit overrides (CLI flags, options) > a Hugging
 * Face `preprocessor_config.json` > the model's `dml.preprocessing` metadata > the input tensor's
 * declared shape > defaults. The result says which
 * source each setting came from, so the report can show it.
 */
import { DmlError } from '../errors.js';
import type { Preprocessing, TensorLayout } from '../image/preprocessing.js';

/** Declared metadata of one model input or output (from onnxruntime's inputMetadata/outputMetadata). */
export interface TensorInfo {
  name: string;
  /** Element type as onnxruntime names it (`float32`, `uint8`, ...); undefined for non-tensors. */
  type: string | undefined;
  /** Dimensions: numbers for fixed sizes, strings (dim_param) or -1 for dynamic ones. */
  shape: Array<number | string>;
}

/**
 * How a token output `[N, T, D]` becomes one embedding per image: `cls` takes token 0 (the class
 * token of ViT, DINOv2, CLIP), `mean` and `max` pool over the patch tokens 1..T-1 (the class token
 * excluded, as the patch-mean features of DINOv2 are computed).
 */
export type TokenPooling = 'cls' | 'mean' | 'max';

/** The pooling choices, for flag parsing. */
export const TOKEN_POOLINGS: readonly TokenPooling[] = ['cls', 'mean', 'max'];

/**
 * Output names that say "this is the embedding", in order of preference: a 2-D output with one of
 * these names is taken over the first output (e.g. `pooler_output` over ViT's `last_hidden_state`).
 */
export const EMBEDDING_OUTPUT_NAMES: readonly string[] = ['image_embeds', 'sentence_embedding', 'embeddings', 'embedding', 'pooler_output'];

/** Symbolic dimension names that say "channels", for a rank-4 input whose dims are all symbolic. */
export const CHANNEL_DIM_NAMES: readonly string[] = ['num_channels', 'channels', 'channel', 'C', 'c'];

/** Element types of an image input or embedding output dmlkit feeds and reads (float16 is cast). */
export const FLOAT_TYPES: readonly string[] = ['float32', 'float16'];

/** How to run an embedder. */
export interface ModelSignature {
  inputName: string;
  /** The input's element type: `float32`, or `float16` (inputs are cast to it). */
  inputType: string;
  outputName: string;
  /** How the token output is pooled, or null for an output that is already [N, D]. */
  pooling: TokenPooling | null;
  /** Batch size the model requires, or null when the batch axis is dynamic. */
  fixedBatch: number | null;
  /** Embedding dimension if the output declares it, else null (known after the first run). */
  outputDim: number | null;
  preprocessing: Preprocessing;
  /** Where each preprocessing field came from (each field present in `preprocessing`). */
  preprocessingSources: PreprocessingSources;
}

/**
 * Where a preprocessing value came from: a flag or option (`override`), the preprocessor config, the
 * model's `dml.preprocessing` metadata, the input's declared shape, or dmlkit's default.
 */
export type PreprocessingSource = 'override' | 'preprocessor config' | 'metadata' | 'model input' | 'default';

/** The optional {@link Preprocessing} fields: present only when a flag, config or metadata sets them. */
const OPTIONAL_FIELDS = ['resizeMode', 'resizeLonger', 'resizeWidth', 'resizeHeight', 'resample', 'cropRounding', 'rescale'] as const;

/** ImageNet statistics, the default for 3-channel models without metadata. */
export const IMAGENET_MEAN = [0.485, 0.456, 0.406];
export const IMAGENET_STD = [0.229, 0.224, 0.225];
/** Default input size for models whose spatial dims are dynamic and not given anywhere. */
export const DEFAULT_SIZE = 224;
/** torchvision's eval convention: resize the shorter side to size / 0.875 (256 for 224), then centre-crop. */
export const DEFAULT_CROP_FRACTION = 0.875;

const fixed = (d: number | string | undefined): number | null => (typeof d === 'number' && d > 0 ? d : null);

/**
 * The output holding the embeddings: the one named `outputName` when given; else, with `pooling`,
 * the first token output (rank 3); else the first 2-D output named like an embedding
 * ({@link EMBEDDING_OUTPUT_NAMES}, in that order of preference); else the first output.
 */
function chooseOutput(modelName: string, outputs: TensorInfo[], outputName: string | undefined, pooling: TokenPooling | undefined): TensorInfo {
  if (outputName !== undefined) {
    const named = outputs.find((o) => o.name === outputName);
    if (!named) throw new DmlError('E_ARG', `${modelName}: no output named "${outputName}"; outputs are ${outputs.map((o) => o.name).join(', ')}`);
    return named;
  }
  const first = outputs[0];
  if (!first) throw new DmlError('E_MODEL', `${modelName}: the model has no outputs`);
  if (pooling !== undefined) return outputs.find((o) => o.shape.length === 3) ?? first;
  for (const name of EMBEDDING_OUTPUT_NAMES) {
    const match = outputs.find((o) => o.name === name && o.shape.length === 2);
    if (match) return match;
  }
  return first;
}

/**
 * Resolves the signature. `modelName` is used in error messages.
 * Errors (E_MODEL): more than one input without a choice, an input other than float32 or float16,
 * input rank other than 4, a declared output rank other than 2 (3 with `pooling`; an undeclared one,
 * shape `[]`, passes with `outputDim` null), a channel count other than 1 or 3, layout that cannot be
 * inferred (a rank-4 input whose dims are all symbolic is NCHW when dim 1 is named like channels,
 * {@link CHANNEL_DIM_NAMES}, NHWC when dim 3 is).
 */
export function resolveModelSignature(
  modelName: string,
  inputs: TensorInfo[],
  outputs: TensorInfo[],
  metadataPreprocessing: Partial<Preprocessing> | undefined,
  overrides: Partial<Preprocessing> & { outputName?: string; pooling?: TokenPooling },
  configPreprocessing?: Partial<Preprocessing>,
): ModelSignature {
  if (inputs.length !== 1) {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: expected exactly one image input but the model has ${inputs.length} (${inputs.map((i) => i.name).join(', ')})`,
    );
  }
  const input = inputs[0] as TensorInfo;
  if (input.type === undefined || !FLOAT_TYPES.includes(input.type)) {
    throw new DmlError('E_MODEL', `${modelName}: input "${input.name}" has type ${input.type ?? 'non-tensor'}; expected float32 or float16`);
  }
  if (input.shape.length !== 4) {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: input "${input.name}" has shape [${input.shape.join(', ')}]; expected rank 4 (NCHW or NHWC image batch)`,
    );
  }
  const output = chooseOutput(modelName, outputs, overrides.outputName, overrides.pooling);
  // An empty shape is an output whose rank the model does not declare (onnxruntime could not infer
  // it): accepted here, and OnnxEmbedder.open runs the model once to find and check its real shape.
  const rank = output.shape.length;
  if (overrides.pooling !== undefined && rank !== 3 && rank !== 0) {
    throw new DmlError('E_ARG', `${modelName}: --pooling ${overrides.pooling} needs a token output [N, T, D] but output "${output.name}" has shape [${output.shape.join(', ')}]`);
  }
  if (overrides.pooling === undefined && rank !== 2 && rank !== 0) {
    const hint =
      rank === 3
        ? `; it holds one vector per token: pass --pooling cls|mean|max (option pooling) to pool it${outputs.some((o) => o.shape.length === 2) ? ', or --output-name <a 2-D output>' : ''}`
        : '';
    throw new DmlError('E_MODEL', `${modelName}: output "${output.name}" has shape [${output.shape.join(', ')}]; expected [N, D] embeddings${hint}`);
  }
  if (output.type !== undefined && !FLOAT_TYPES.includes(output.type)) {
    throw new DmlError('E_MODEL', `${modelName}: output "${output.name}" has type ${output.type}; expected float32 or float16`);
  }

  const { preprocessing, sources } = resolveImagePreprocessing(modelName, input, metadataPreprocessing, overrides, configPreprocessing);
  const dimOut = fixed(output.shape[rank === 3 ? 2 : 1]);
  return {
    inputName: input.name,
    inputType: input.type,
    outputName: output.name,
    pooling: overrides.pooling ?? null,
    fixedBatch: fixed(input.shape[0]),
    outputDim: dimOut,
    preprocessing,
    preprocessingSources: sources,
  };
}

/** Where each field of a resolved {@link Preprocessing} came from. */
export type PreprocessingSources = Partial<Record<keyof Preprocessing, PreprocessingSource>>;

/**
 * The preprocessing of an image model whose input is `input` (rank 4, NCHW or NHWC), each field from
 * the first source that gives it: `overrides` > `configPreprocessing` (a `preprocessor_config.json`) >
 * `metadataPreprocessing` (`dml.preprocessing`) > the input's declared shape > dmlkit's defaults
 * ({@link DEFAULT_SIZE}, {@link DEFAULT_CROP_FRACTION}, ImageNet statistics for 3 channels).
 * Errors (E_MODEL): a layout that cannot be inferred, a declared channel count other than 1 or 3;
 * (E_ARG): a size or channel count that contradicts the declared input.
 */
export function resolveImagePreprocessing(
  modelName: string,
  input: TensorInfo,
  metadataPreprocessing: Partial<Preprocessing> | undefined,
  overrides: Partial<Preprocessing>,
  configPreprocessing?: Partial<Preprocessing>,
): { preprocessing: Preprocessing; sources: PreprocessingSources } {
  const sources: PreprocessingSources = {};
  const pick = <K extends keyof Preprocessing>(key: K, fromInput: Preprocessing[K] | null, fallback: () => Preprocessing[K]): Preprocessing[K] => {
    if (overrides[key] !== undefined) {
      sources[key] = 'override';
      return overrides[key] as Preprocessing[K];
    }
    if (configPreprocessing?.[key] !== undefined) {
      sources[key] = 'preprocessor config';
      return configPreprocessing[key] as Preprocessing[K];
    }
    if (metadataPreprocessing?.[key] !== undefined) {
      sources[key] = 'metadata';
      return metadataPreprocessing[key] as Preprocessing[K];
    }
    if (fromInput !== null) {
      sources[key] = 'model input';
      return fromInput;
    }
    sources[key] = 'default';
    return fallback();
  };

  const [, d1, d2, d3] = input.shape;
  const isChannelDim = (d: number | string | undefined): boolean => d === 1 || d === 3;
  const namedChannels = (d: number | string | undefined): boolean => typeof d === 'string' && CHANNEL_DIM_NAMES.includes(d);
  const allSymbolic = [d1, d2, d3].every((d) => typeof d === 'string' || d === -1);
  const inferredLayout: TensorLayout | null = isChannelDim(d1)
    ? 'NCHW'
    : isChannelDim(d3)
      ? 'NHWC'
      : allSymbolic && namedChannels(d1) && !namedChannels(d3)
        ? 'NCHW'
        : allSymbolic && namedChannels(d3) && !namedChannels(d1)
          ? 'NHWC'
          : null;
  const layout = pick('layout', inferredLayout, () => {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: cannot tell the layout of input "${input.name}" [${input.shape.join(', ')}]: neither dim 1 nor dim 3 is 1 or 3 channels; pass --layout NCHW|NHWC`,
    );
  });
  const [cDim, hDim, wDim] = layout === 'NCHW' ? [d1, d2, d3] : [d3, d1, d2];
  const declaredChannels = fixed(cDim);
  if (declaredChannels !== null && declaredChannels !== 1 && declaredChannels !== 3) {
    throw new DmlError('E_MODEL', `${modelName}: input "${input.name}" has ${declaredChannels} channels in ${layout} layout; expected 1 or 3`);
  }
  const channels = pick('channels', declaredChannels as 1 | 3 | null, () => 3);
  if (declaredChannels !== null && channels !== declaredChannels) {
    throw new DmlError('E_ARG', `${modelName}: channels ${channels} requested but input "${input.name}" takes ${declaredChannels}`);
  }
  const height = pick('height', fixed(hDim), () => DEFAULT_SIZE);
  const width = pick('width', fixed(wDim), () => DEFAULT_SIZE);
  for (const [name, value, declared] of [
    ['height', height, fixed(hDim)],
    ['width', width, fixed(wDim)],
  ] as const) {
    if (declared !== null && value !== declared) {
      throw new DmlError('E_ARG', `${modelName}: ${name} ${value} requested but input "${input.name}" takes ${declared}`);
    }
  }
  const resizeShorter = pick('resizeShorter', null, () => Math.round(Math.max(height, width) / DEFAULT_CROP_FRACTION));
  const mean = pick('mean', null, () => (channels === 3 ? IMAGENET_MEAN : [0]));
  const std = pick('std', null, () => (channels === 3 ? IMAGENET_STD : [1]));

  const optional: Partial<Preprocessing> = {};
  for (const key of OPTIONAL_FIELDS) {
    const value = pick(key, null, () => undefined);
    if (value === undefined) delete sources[key];
    else (optional as Record<string, unknown>)[key] = value;
  }
  // An exact resize without its size (`--stretch`, `resizeMode: 'exact'` alone) is to the input size: Keras' stretch.
  if (optional.resizeMode === 'exact' && optional.resizeWidth === undefined && optional.resizeHeight === undefined) {
    optional.resizeWidth = width;
    optional.resizeHeight = height;
    sources.resizeWidth = sources.resizeHeight = sources.resizeMode as PreprocessingSource;
  }
  return { preprocessing: { height, width, resizeShorter, channels, layout, mean, std, ...optional }, sources };
}

/**
 * The defaults a resolved preprocessing used (no override, config or metadata gave them), in words
 * for a warning; empty when none was. A newcomer's most likely wrong number is a Hub model run with
 * ImageNet statistics it was not trained with.
 */
export function preprocessingDefaultsUsed(preprocessing: Preprocessing, sources: PreprocessingSources): string[] {
  const used: string[] = [];
  if (sources.height === 'default' || sources.width === 'default') used.push(`input size ${preprocessing.height}x${preprocessing.width}`);
  if (sources.resizeShorter === 'default') used.push(`shorter side resized to ${preprocessing.resizeShorter} before the centre crop`);
  if (sources.mean === 'default' || sources.std === 'default') {
    const imagenet = preprocessing.channels === 3 ? 'ImageNet ' : '';
    used.push(`${imagenet}mean [${preprocessing.mean.join(', ')}] and std [${preprocessing.std.join(', ')}]`);
  }
  return used;
}
