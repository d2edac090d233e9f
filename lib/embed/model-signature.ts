/**
 * @file Working out how to feed an image embedder from what the ONNX model declares.
 *
 * Inputs considered, in order of precedence: explicit overrides (CLI/config) > the model's
 * `dml.preprocessing` metadata > the input tensor's declared shape > defaults. The result says which
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

/** How to run an embedder. */
export interface ModelSignature {
  inputName: string;
  outputName: string;
  /** Batch size the model requires, or null when the batch axis is dynamic. */
  fixedBatch: number | null;
  /** Embedding dimension if the output declares it, else null (known after the first run). */
  outputDim: number | null;
  preprocessing: Preprocessing;
  /** Where each preprocessing field came from. */
  preprocessingSources: Record<keyof Preprocessing, 'override' | 'metadata' | 'model input' | 'default'>;
}

/** ImageNet statistics, the default for 3-channel models without metadata. */
export const IMAGENET_MEAN = [0.485, 0.456, 0.406];
export const IMAGENET_STD = [0.229, 0.224, 0.225];
/** Default input size for models whose spatial dims are dynamic and not given anywhere. */
export const DEFAULT_SIZE = 224;
/** torchvision's eval convention: resize the shorter side to size / 0.875 (256 for 224), then centre-crop. */
export const DEFAULT_CROP_FRACTION = 0.875;

const fixed = (d: number | string | undefined): number | null => (typeof d === 'number' && d > 0 ? d : null);

/**
 * Resolves the signature. `modelName` is used in error messages.
 * Errors (E_MODEL): more than one input without a choice, non-float32 input, input rank other than 4,
 * a declared output rank other than 2 (an undeclared one, shape `[]`, passes with `outputDim` null), a
 * channel count other than 1 or 3, layout that cannot be inferred.
 */
export function resolveModelSignature(
  modelName: string,
  inputs: TensorInfo[],
  outputs: TensorInfo[],
  metadataPreprocessing: Partial<Preprocessing> | undefined,
  overrides: Partial<Preprocessing> & { outputName?: string },
): ModelSignature {
  if (inputs.length !== 1) {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: expected exactly one image input but the model has ${inputs.length} (${inputs.map((i) => i.name).join(', ')})`,
    );
  }
  const input = inputs[0] as TensorInfo;
  if (input.type !== 'float32') {
    throw new DmlError('E_MODEL', `${modelName}: input "${input.name}" has type ${input.type ?? 'non-tensor'}; expected float32`);
  }
  if (input.shape.length !== 4) {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: input "${input.name}" has shape [${input.shape.join(', ')}]; expected rank 4 (NCHW or NHWC image batch)`,
    );
  }
  let output: TensorInfo | undefined;
  if (overrides.outputName !== undefined) {
    output = outputs.find((o) => o.name === overrides.outputName);
    if (!output) {
      throw new DmlError('E_ARG', `${modelName}: no output named "${overrides.outputName}"; outputs are ${outputs.map((o) => o.name).join(', ')}`);
    }
  } else {
    output = outputs[0];
  }
  if (!output) throw new DmlError('E_MODEL', `${modelName}: the model has no outputs`);
  // An empty shape is an output whose rank the model does not declare (onnxruntime could not infer
  // it): accepted here, and OnnxEmbedder.open runs the model once to find and check its real shape.
  if (output.shape.length !== 2 && output.shape.length !== 0) {
    throw new DmlError(
      'E_MODEL',
      `${modelName}: output "${output.name}" has shape [${output.shape.join(', ')}]; expected [N, D] embeddings`,
    );
  }
  if (output.type !== undefined && output.type !== 'float32') {
    throw new DmlError('E_MODEL', `${modelName}: output "${output.name}" has type ${output.type}; expected float32`);
  }

  const sources = {} as ModelSignature['preprocessingSources'];
  const pick = <K extends keyof Preprocessing>(key: K, fromInput: Preprocessing[K] | null, fallback: () => Preprocessing[K]): Preprocessing[K] => {
    if (overrides[key] !== undefined) {
      sources[key] = 'override';
      return overrides[key] as Preprocessing[K];
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
  const inferredLayout: TensorLayout | null = isChannelDim(d1) ? 'NCHW' : isChannelDim(d3) ? 'NHWC' : null;
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

  const dimOut = fixed(output.shape[1]);
  return {
    inputName: input.name,
    outputName: output.name,
    fixedBatch: fixed(input.shape[0]),
    outputDim: dimOut,
    preprocessing: { height, width, resizeShorter, channels, layout, mean, std },
    preprocessingSources: sources,
  };
}
