/**
 * @file On-disk cache of embedding sets, keyed by what determines them: the model's bytes, the
 * preprocessing, the output used, the items embedded (manifest hash) and whether bad images were skipped.
 * A hit loads `<dir>/<key>.npy` + `<key>.json`; a miss embeds and stores them atomically.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { ManifestItem } from '../data/manifest.js';
import { canonicalJson, sha256 } from '../util/hash.js';
import type { EmbedItemsOptions, SkippedImage, OnnxEmbedder } from './embedder.js';
import type { EmbeddingSet } from './embedding-set.js';
import { embeddingFiles, loadEmbeddingSet, saveEmbeddingSet } from './embedding-files.js';

/** Bump when the embedding computation changes in a way that invalidates old caches. */
export const EMBEDDING_CACHE_VERSION = 1;

/** Result of {@link embedItemsCached}. */
export interface CachedEmbedding {
  set: EmbeddingSet;
  failures: SkippedImage[];
  /** True when the set was read from the cache. */
  fromCache: boolean;
  /** Cache key (hex), also the file prefix inside the cache folder. */
  key: string;
}

/**
 * The cache key for embedding `manifestHash`'s items with `embedder`. How the images are decoded (in
 * process or by decode processes, how many at once) is not part of it: the pixels are the same.
 */
export function embeddingCacheKey(embedder: OnnxEmbedder, manifestHash: string, skipBadImages: boolean): string {
  return sha256(
    canonicalJson({
      version: EMBEDDING_CACHE_VERSION,
      model: embedder.modelSha256,
      output: embedder.signature.outputName,
      ...(embedder.signature.pooling !== null ? { pooling: embedder.signature.pooling } : {}),
      preprocessing: embedder.preprocessing,
      manifest: manifestHash,
      skipBadImages,
    }),
  );
}

/** What an embedding cache entry records of how it was made: the model, its preprocessing and provider, the data, when. */
export function embeddingProvenance(embedder: OnnxEmbedder, manifestHash: string): Record<string, unknown> {
  return {
    modelPath: embedder.modelPath,
    modelSha256: embedder.modelSha256,
    manifestHash,
    preprocessing: embedder.preprocessing,
    executionProvider: embedder.provider,
    createdAt: new Date().toISOString(),
  };
}

/**
 * Embeds `items` with `embedder`, or loads the result of an identical earlier run from `cacheDir`.
 * Without a `cacheDir` nothing is cached.
 */
export async function embedItemsCached(
  embedder: OnnxEmbedder,
  items: ManifestItem[],
  manifestHash: string,
  cacheDir: string | undefined,
  options: EmbedItemsOptions = {},
): Promise<CachedEmbedding> {
  const key = embeddingCacheKey(embedder, manifestHash, options.skipBadImages ?? false);
  const prefix = cacheDir !== undefined ? path.join(cacheDir, key) : undefined;
  if (prefix !== undefined) {
    const files = embeddingFiles(prefix);
    const present = await Promise.all([access(files.vectors), access(files.sidecar)]).then(
      () => true,
      () => false,
    );
    if (present) {
      const { set, provenance } = await loadEmbeddingSet(prefix);
      const failures = (provenance['failures'] as SkippedImage[] | undefined) ?? [];
      options.onProgress?.(items.length, items.length);
      return { set, failures, fromCache: true, key };
    }
  }
  const { set, failures } = await embedder.embedItems(items, options);
  if (prefix !== undefined) {
    await saveEmbeddingSet(prefix, set, {
      ...embeddingProvenance(embedder, manifestHash),
      failures,
    });
  }
  return { set, failures, fromCache: false, key };
}
