/**
 * @file Model specifications, as a config file gives them, and their schema ({@link modelSpecSchema}),
 * which checks them and fills their defaults. Every model maps
 * its input to an L2-normalised embedding of `embeddingDim` values:
 *
 * - `mlp`: a linear (`hidden: []`) or MLP head on precomputed features (e.g. backbone features from
 *   backbone-features.ts), input [inputDim].
 * - `cnn`: a small convolutional network for small images, NHWC input [H, W, C].
 * - `convnet`: a compact strided-convolution network (3x3 stride-2 conv + batch norm per stage, global
 *   average pooling) for real image sets of 32-128 px, NHWC input [H, W, C].
 * - `tfjs-backbone`: a TensorFlow.js layers model (model.json + weight shards, e.g. a Keras ResNet50 or
 *   MobileNetV2 converted with tensorflowjs_converter) as a trainable backbone, with a new head.
 * - `onnx`: an ONNX network (a PyTorch export, a downloaded model), optionally cut and given a new head,
 *   trained as ONNX by the graph trainer (`backend: "onnx"`; lib/engine/graph/embedding-network.ts).
 */
import { z } from 'zod';
import { positiveIntegerField } from '../../util/zod-fields.js';
import { GEM_P_RANGE, type EmbeddingHeadSpec } from '../../engine/graph/embedding-network.js';

/** Activations of hidden layers; each has a one-node ONNX counterpart. */
export type Activation = 'relu' | 'elu' | 'tanh' | 'sigmoid';

export const ACTIVATIONS: readonly Activation[] = ['relu', 'elu', 'tanh', 'sigmoid'];

/** The embedding head shared by all kinds: hidden Dense layers, then Dense(embeddingDim), then L2Normalize. */
export interface HeadSpec {
  /** Widths of hidden Dense layers; [] = a linear head. */
  hidden: number[];
  embeddingDim: number;
  /** Activation after each hidden layer. Default `relu`. */
  activation?: Activation | undefined;
  /** Batch normalisation after each hidden Dense layer (before the activation). Default false. */
  batchNorm?: boolean | undefined;
}

/** (a) Linear or MLP head on feature vectors of length `inputDim`. */
export interface MlpModelSpec extends HeadSpec {
  kind: 'mlp';
  inputDim: number;
}

/** (b) Small CNN: per entry of `filters`, Conv2D (same padding) [+ BN] + activation + 2x2 max pool; then Flatten and the head. */
export interface CnnModelSpec {
  kind: 'cnn';
  /** NHWC input without the batch axis: [height, width, channels]. */
  inputShape: [number, number, number];
  embeddingDim: number;
  /** Filters per convolution block. Default [32, 64]. */
  filters?: number[] | undefined;
  /** Square kernel size of every convolution. Default 3. */
  kernelSize?: number | undefined;
  /** Hidden Dense widths between Flatten and the embedding. Default [128]. */
  hidden?: number[] | undefined;
  activation?: Activation | undefined;
  /** Batch normalisation after each convolution and hidden Dense layer. Default false. */
  batchNorm?: boolean | undefined;
}

/** How a convnet stage halves height and width. */
export type ConvnetDownsample = 'stride' | 'maxpool';
/** A convnet's global pooling. */
export type ConvnetPooling = 'avg' | 'max' | 'avgmax';

/**
 * (b') Compact CNN for real image sets: per entry of `widths` one stage of `depth` 3x3 convolution
 * ('same' padding, no bias) + BatchNormalization + activation blocks. Every stage halves height and
 * width: with `downsample: "maxpool"` (default) the very first convolution has stride 2 and every
 * later stage starts with a 2x2 max-pool; with `"stride"` the first convolution of every stage has
 * stride 2. After the last stage global pooling (`pooling`: average, max, or both concatenated,
 * default both), optionally BatchNormalization of the pooled features (`poolBatchNorm`), and the head.
 */
export interface ConvnetModelSpec {
  kind: 'convnet';
  /** NHWC input without the batch axis: [height, width, channels]; height and width at least 2^stages. */
  inputShape: [number, number, number];
  embeddingDim: number;
  /** Channels of each stage (one stage per entry). Default [32, 64, 128, 256]. */
  widths?: number[] | undefined;
  /** 3x3 convolutions per stage. Default 1. */
  depth?: number | undefined;
  /** How stages after the first halve the map: a 2x2 max-pool (`maxpool`, default) or a stride-2 convolution (`stride`). */
  downsample?: ConvnetDownsample | undefined;
  /** Global pooling after the last stage: average, max, or both concatenated (`avgmax`, default). */
  pooling?: ConvnetPooling | undefined;
  /** Hidden Dense widths between the pooled features and the embedding. Default []. */
  hidden?: number[] | undefined;
  /** Activation after every batch normalisation (stages and hidden head layers). Default `relu`. */
  activation?: Activation | undefined;
  /** Batch normalisation of the pooled features before the head (centres them). Default false. */
  poolBatchNorm?: boolean | undefined;
}

/** (d) A tfjs layers model loaded from `modelJson` as backbone, with a new head. */
export interface TfjsBackboneModelSpec {
  kind: 'tfjs-backbone';
  /** Path of the model.json (weight shards beside it, as its weightsManifest names them). */
  modelJson: string;
  embeddingDim: number;
  /** Layer whose output is the backbone's feature (e.g. `avg_pool` of a Keras ResNet50 with its top). Default: the model's output. */
  outputLayer?: string | undefined;
  /** Global pooling applied when the feature is a 4-D (NHWC) or 3-D map. Default `avg`. */
  pooling?: 'avg' | 'max' | undefined;
  /** Hidden Dense widths of the head. Default [] (one Dense to the embedding). */
  hidden?: number[] | undefined;
  activation?: Activation | undefined;
  batchNorm?: boolean | undefined;
  /** Train the backbone's weights too (fine-tuning). Default true; false freezes them. */
  trainBackbone?: boolean | undefined;
}

/**
 * (e) An ONNX network (a PyTorch export, a downloaded model), optionally cut at `output` and given a new
 * head; trained by the graph trainer only (`backend: "onnx"`), as ONNX, with no TensorFlow.js model.
 */
export interface OnnxModelSpec {
  kind: 'onnx';
  /** The ONNX file; image input NCHW [batch, C, H, W]. */
  path: string;
  /**
   * The `preprocessor_config.json` the training images' preprocessing comes from (data.image's fields
   * override it); default one beside the model or in its parent folder; false: none
   * (lib/train/backbone-preprocessing.ts).
   */
  preprocessorConfig?: string | false | undefined;
  /** The value the network ends at; default the model's output. */
  output?: string | undefined;
  /** A new head after `output`: global pooling, optional BatchNorm neck, Linear, then L2 normalisation. */
  head?: EmbeddingHeadSpec | undefined;
  /** Freeze the network up to this value (a node output): the weights before it are not trained. */
  freezeUpTo?: string | undefined;
  /** The factor of the learning rate the network's own weights train at (the new head's at the rate); default 1. */
  backboneLearningRateScale?: number | undefined;
  /** Every BatchNormalization normalises with its running statistics, which stay (frozen BN); default false. */
  frozenBatchNorm?: boolean | undefined;
}

/** Any trainable embedder: an MLP head, a small CNN, a compact strided CNN, a TensorFlow.js backbone with a head, or an ONNX network. */
export type ModelSpec = MlpModelSpec | CnnModelSpec | ConvnetModelSpec | TfjsBackboneModelSpec | OnnxModelSpec;

/** The schema of the model specs above, as a training config gives them (`model`). */
export const modelSpecSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('mlp'),
      /** Input length; for images it must equal height x width x channels (the image is flattened). */
      inputDim: positiveIntegerField,
      hidden: z.array(positiveIntegerField).default([]),
      embeddingDim: positiveIntegerField,
      activation: z.enum(ACTIVATIONS).default('relu'),
      batchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('cnn'),
      inputShape: z.tuple([positiveIntegerField, positiveIntegerField, positiveIntegerField]),
      embeddingDim: positiveIntegerField,
      filters: z.array(positiveIntegerField).default([32, 64]),
      kernelSize: positiveIntegerField.default(3),
      hidden: z.array(positiveIntegerField).default([128]),
      activation: z.enum(ACTIVATIONS).default('relu'),
      batchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('convnet'),
      inputShape: z.tuple([positiveIntegerField, positiveIntegerField, positiveIntegerField]),
      embeddingDim: positiveIntegerField,
      widths: z.array(positiveIntegerField).min(1).default([32, 64, 128, 256]),
      depth: positiveIntegerField.default(1),
      downsample: z.enum(['stride', 'maxpool']).default('maxpool'),
      pooling: z.enum(['avg', 'max', 'avgmax']).default('avgmax'),
      hidden: z.array(positiveIntegerField).default([]),
      activation: z.enum(ACTIVATIONS).default('relu'),
      poolBatchNorm: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      kind: z.literal('tfjs-backbone'),
      modelJson: z.string().min(1),
      embeddingDim: positiveIntegerField,
      outputLayer: z.string().optional(),
      pooling: z.enum(['avg', 'max']).default('avg'),
      hidden: z.array(positiveIntegerField).default([]),
      activation: z.enum(ACTIVATIONS).default('relu'),
      batchNorm: z.boolean().default(false),
      trainBackbone: z.boolean().default(true),
    })
    .strict(),
  z
    .object({
      kind: z.literal('onnx'),
      /** An ONNX file (a PyTorch export, a downloaded network) with an NCHW image input [batch, C, H, W]. */
      path: z.string().min(1),
      /**
       * The Hugging Face `preprocessor_config.json` the training images' preprocessing comes from
       * (data.image's fields override it); default one beside the model or in its parent folder; false: none.
       */
      preprocessorConfig: z.union([z.string().min(1), z.literal(false)]).optional(),
      /** The value the network ends at (a node output); default the model's output. */
      output: z.string().min(1).optional(),
      /** A new head after `output` (lib/engine/graph/embedding-network.ts); needed when `output` is a feature map. */
      head: z
        .object({
          pooling: z.enum(['avg', 'max', 'avgmax', 'gem']).default('avg'),
          /** GeM's exponent p with `pooling: "gem"` (default 3), in [0.1, 50] (GEM_P_RANGE). */
          gemP: z.number().min(GEM_P_RANGE[0]).max(GEM_P_RANGE[1]).optional(),
          batchNorm: z.boolean().default(false),
          embeddingDim: positiveIntegerField,
        })
        .strict()
        .optional(),
      /** Freeze the network up to this value (a node output): the weights it is computed from are not trained. */
      freezeUpTo: z.string().min(1).optional(),
      /** The factor of the learning rate the network's own weights train at (the new head's at the rate), e.g. 0.1. */
      backboneLearningRateScale: z.number().positive().optional(),
      /** Every BatchNormalization normalises with its running statistics, which stay as they are (frozen BN). */
      frozenBatchNorm: z.boolean().optional(),
    })
    .strict(),
]);

/** A model spec with its defaults filled in, as {@link modelSpecSchema} parses it. */
export type ResolvedModelSpec = z.output<typeof modelSpecSchema>;

/** The resolved spec of one model kind. */
export type ResolvedSpecOf<Kind extends ResolvedModelSpec['kind']> = Extract<ResolvedModelSpec, { kind: Kind }>;

/** The embedding dimension a model spec gives: its `embeddingDim`, an ONNX network's new head's; undefined for an ONNX network without a head. */
export function specEmbeddingDim(spec: ModelSpec): number | undefined {
  return spec.kind === 'onnx' ? spec.head?.embeddingDim : spec.embeddingDim;
}
