/**
 * @file (c) Backbone features for a head-only model: embeddings of the training images computed once
 * by any ONNX backbone with onnxruntime (the existing {@link OnnxEmbedder}), then fed to an `mlp`
 * model (mlp.ts) whose `inputDim` is the feature dimension.
 *
 * View 0 is the plain view: the evaluation transform (resize shorter side, centre crop), computed and
 * cached by `embedItemsCached` exactly as `dml eval` does. Views 1..V are augmented views: the seeded
 * train transform (random resized crop + flip, lib/image) of every image, one generator per view
 * forked in order from `new Rng(seed)`, so view v is the same whichever views are cached. Augmented
 * views are cached beside the plain one under a key that adds the view number, the seed and the
 * augmentation to the plain view's key.
 *
 * Normalisation: the embedder L2-normalises every row, so these features are unit vectors. That is
 * kept on purpose: the head's output is L2-normalised anyway, a linear map of unit features loses only
 * each image's feature scale, and the trained head composes with the backbone at export as
 * backbone -> L2 normalisation -> head (the exporter must insert that normalisation). A backbone row
 * of all zeros cannot be normalised and is an error (E_EMBEDDING).
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { ManifestItem } from '../../data/manifest.js';
import { embeddingCacheKey, embeddingProvenance, embedItemsCached } from '../../embed/cache.js';
import type { EmbedItemsOptions, SkippedImage, OnnxEmbedder } from '../../embed/embedder.js';
import type { EmbeddingSet } from '../../embed/embedding-set.js';
import { embeddingFiles, loadEmbeddingSet, saveEmbeddingSet } from '../../embed/embedding-files.js';
import { invalidParameterError } from '../../errors.js';
import type { TrainAugmentation } from '../../image/preprocessing.js';
import { validateAugmentation } from '../../image/validate.js';
import { canonicalJson, sha256 } from '../../util/hash.js';
import { Rng } from '../../util/rng.js';
import { z } from 'zod';
import { positiveIntegerField } from '../../util/zod-fields.js';
import { augmentationSchema } from '../batch-augmentation.js';
import { DEFAULT_EMBED_BATCH_SIZE } from '../../util/defaults.js';
import { DEFAULT_DEVICE, DEVICE_CHOICES } from '../../onnx/devices.js';

/** Options of {@link computeBackboneFeatures}. */
export interface BackboneFeatureOptions {
  /** Folder of the embedding cache; nothing is cached without it. */
  cacheDir?: string;
  /** Augmented views per image besides the plain view. Default 0. */
  augmentedViews?: number;
  /** The train augmentation of the augmented views; required when `augmentedViews` > 0. */
  augmentation?: TrainAugmentation;
  /** Seed of the augmented views. Default 0. */
  seed?: number;
  skipBadImages?: boolean;
  concurrency?: number;
  limitInputPixels?: number;
  /** Called with (images done, images total) over all views. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** Backbone features of a list of items. */
export interface BackboneFeatures {
  /** views[0] is the plain view, views[v] the v-th augmented view; all hold the same items in the same order. */
  views: EmbeddingSet[];
  /** Whether each view came from the cache. */
  fromCache: boolean[];
  /** Images that could not be decoded (with `skipBadImages`); they are missing from every view. */
  failures: SkippedImage[];
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Embeds `items` with the seeded train augmentation drawn from `rng`. */
async function embedAugmented(
  embedder: OnnxEmbedder,
  items: ManifestItem[],
  augmentation: TrainAugmentation,
  rng: Rng,
  options: BackboneFeatureOptions,
  progress: (count: number) => void,
): Promise<EmbeddingSet> {
  let reported = 0;
  const { set } = await embedder.embedItems(items, {
    augment: { augmentation, rng },
    skipBadImages: options.skipBadImages ?? false,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.limitInputPixels !== undefined ? { limitInputPixels: options.limitInputPixels } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    onProgress: (done) => {
      progress(done - reported);
      reported = done;
    },
  });
  return set;
}

/**
 * Computes (or loads from the cache) the backbone features of `items` (`manifestHash` identifies them,
 * as for the evaluation cache). Errors: E_ARG for bad options; the embedder's errors otherwise.
 */
export async function computeBackboneFeatures(
  embedder: OnnxEmbedder,
  items: ManifestItem[],
  manifestHash: string,
  options: BackboneFeatureOptions = {},
): Promise<BackboneFeatures> {
  const viewCount = options.augmentedViews ?? 0;
  if (!Number.isInteger(viewCount) || viewCount < 0) throw invalidParameterError('augmentedViews', 'an integer >= 0', viewCount);
  const seed = options.seed ?? 0;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw invalidParameterError('seed', 'an integer in [0, 2^32)', seed);
  const augmentation = options.augmentation;
  if (viewCount > 0) {
    if (augmentation === undefined) throw invalidParameterError('augmentation', 'a train augmentation when augmentedViews > 0', augmentation);
    validateAugmentation(augmentation, 'augmentation');
  }
  const skipBadImages = options.skipBadImages ?? false;
  const total = items.length * (1 + viewCount);
  let done = 0;
  const progress = (count: number): void => {
    done += count;
    options.onProgress?.(done, total);
  };

  const plainOptions: EmbedItemsOptions = {
    skipBadImages,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.limitInputPixels !== undefined ? { limitInputPixels: options.limitInputPixels } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    onProgress: (d) => options.onProgress?.(d, total),
  };
  const plain = await embedItemsCached(embedder, items, manifestHash, options.cacheDir, plainOptions);
  done = items.length;
  const views: EmbeddingSet[] = [plain.set];
  const fromCache: boolean[] = [plain.fromCache];

  const root = new Rng(seed);
  const viewRngs = Array.from({ length: viewCount }, () => root.fork());
  const baseKey = embeddingCacheKey(embedder, manifestHash, skipBadImages);
  for (let v = 1; v <= viewCount; v++) {
    const key = sha256(canonicalJson({ base: baseKey, view: v, seed, augmentation }));
    const prefix = options.cacheDir !== undefined ? path.join(options.cacheDir, key) : undefined;
    if (prefix !== undefined && (await exists(embeddingFiles(prefix).vectors)) && (await exists(embeddingFiles(prefix).sidecar))) {
      views.push((await loadEmbeddingSet(prefix)).set);
      fromCache.push(true);
      progress(items.length);
      continue;
    }
    const set = await embedAugmented(embedder, items, augmentation as TrainAugmentation, viewRngs[v - 1] as Rng, options, progress);
    if (prefix !== undefined) {
      await saveEmbeddingSet(prefix, set, {
        ...embeddingProvenance(embedder, manifestHash),
        augmentation,
        view: v,
        seed,
      });
    }
    views.push(set);
    fromCache.push(false);
  }
  return { views, fromCache, failures: plain.failures };
}

/**
 * Recipe (c): train a head on features of a frozen ONNX backbone, computed once with onnxruntime
 * through the evaluation spine's embedder and cache (lib/train/models/backbone-features.ts).
 */
export const featuresSpecSchema = z
  .object({
    /** The ONNX backbone; its preprocessing comes from its metadata, overridden by data.image fields. */
    backbone: z.string().min(1),
    /** Augmented views per training image besides the plain view; each step draws one view per row. */
    augmentedViews: z.number().int().min(0).default(0),
    /** Augmentation of the augmented views (defaults: torchvision's RandomResizedCrop + flip). */
    augmentation: augmentationSchema.default({ scale: [0.08, 1], ratio: [3 / 4, 4 / 3], flipProbability: 0.5 }),
    /** Feature cache folder (shared between runs; default `.dml-cache/features`). */
    cacheDir: z.string().min(1).default('.dml-cache/features'),
    /** Execution provider of the backbone. */
    device: z.enum(DEVICE_CHOICES).default(DEFAULT_DEVICE),
    /** Images per onnxruntime call. */
    batchSize: positiveIntegerField.default(DEFAULT_EMBED_BATCH_SIZE),
  })
  .strict();
