/**
 * @file The work of `dml index build|add|remove|optimize|info` (index-command.ts declares the
 * commands), through the index-store interface (lib/index-store/index-store.ts) only. Loaded only when
 * a subcommand runs.
 */
import type { ImageSource, ManifestItem } from '../data/manifest.js';
import { manifestHash, openDataset } from '../data/open-dataset.js';
import { embedItemsCached } from '../embed/cache.js';
import { decodeProcessCount, OnnxEmbedder, type SkippedImage } from '../embed/embedder.js';
import { DmlError, invalidParameterError } from '../errors.js';
import { ImageDecodePool } from '../image/decode-pool.js';
import { checkNewIndexFolder } from '../index-store/layout.js';
import { createIndexStore, openIndexStore, parseIndexLocation } from '../index-store/open-store.js';
import { createProgress } from '../util/progress.js';
import { parsePositiveInt } from './parse-options.js';
import { decodeWorkers, embedderOptions, limitInputPixels, withSkipBadImagesHint } from './embed-flags.js';
import { hnswParameters } from './hnsw-flags.js';
import { lanceParameters } from './lance-flags.js';
import type { AddFlags, BuildFlags, OptimizeFlags } from './index-command.js';
import { preprocessingOverrides } from './preprocessing-flags.js';
import { printWarning as warn } from './warning.js';


function reportFailures(failures: SkippedImage[]): void {
  if (failures.length === 0) return;
  warn(`skipped ${failures.length} undecodable image${failures.length === 1 ? '' : 's'}, first: ${failures[0]?.message ?? ''}`);
}

export async function runBuild(model: string, images: string, flags: BuildFlags): Promise<void> {
  const options = embedderOptions(flags);
  const hnsw = hnswParameters(flags);
  const ann = lanceParameters(flags);
  const { kind, dir } = parseIndexLocation(flags.out, '--out');
  if (kind === 'hnsw' && flags.lanceTable !== undefined) {
    throw invalidParameterError('--lance-table', 'no table location with an hnswlib --out (only --out lance:<folder> has one)', flags.lanceTable);
  }
  const workers = decodeWorkers(flags);
  const preprocessing = preprocessingOverrides(flags);
  const pixelLimit = limitInputPixels(flags);
  // Every flag is checked above, before any file is read.
  await checkNewIndexFolder(dir, '--out');
  const manifest = await openDataset(images, { warn });
  const hash = await manifestHash(manifest);
  const embedder = await OnnxEmbedder.open(model, {
    ...options,
    preprocessing,
    ...(flags.outputName !== undefined ? { outputName: flags.outputName } : {}),
    ...(flags.preprocessorConfig !== undefined ? { preprocessorConfig: flags.preprocessorConfig } : {}),
  });
  for (const message of embedder.warnings) warn(message); // e.g. several outputs and no --output-name
  try {
    const bar = createProgress('embed');
    const { set, failures, fromCache } = await embedItemsCached(embedder, manifest.items, hash, flags.cache ? flags.cacheDir : undefined, {
      skipBadImages: flags.skipBadImages === true,
      ...pixelLimit,
      ...(workers !== undefined ? { workers } : {}),
      onProgress: (done, total) => bar.update(done, total),
    }).catch((err: unknown) => {
      throw withSkipBadImagesHint(err, flags);
    });
    bar.stop();
    reportFailures(failures);
    const sources = new Map(manifest.items.map((item) => [item.id, item.source]));
    const graphBar = createProgress(kind === 'lance' ? 'lance write' : 'hnsw build');
    await createIndexStore(flags.out, {
      modelPath: model,
      metadata: {
        model: {
          sha256: embedder.modelSha256,
          source: model,
          outputName: embedder.signature.outputName,
          ...(embedder.signature.pooling !== null ? { pooling: embedder.signature.pooling } : {}),
        },
        preprocessing: embedder.preprocessing,
        dataset: { spec: images, manifestHash: hash },
      },
      set,
      sources: set.ids.map((id) => sources.get(id) as ImageSource),
      hnsw,
      ann,
      lanceTable: flags.lanceTable,
      onProgress: (done, total) => graphBar.update(done, total),
    });
    graphBar.stop();
    const labels = new Set(set.labels).size;
    process.stdout.write(
      `Indexed ${set.count} items (${labels} labels, ${set.dim}-d${fromCache ? ', embeddings from the cache' : `, embedded on ${embedder.provider}`}) from ${images} into ${flags.out}\n`,
    );
  } finally {
    await embedder.release();
  }
}

export async function runAdd(dir: string, images: string, flags: AddFlags): Promise<void> {
  const options = embedderOptions(flags);
  const snapshotEvery = parsePositiveInt(flags.snapshotEvery, '--snapshot-every');
  const compactEvery = parsePositiveInt(flags.compactEvery, '--compact-every');
  const workers = decodeWorkers(flags);
  const pixelLimit = limitInputPixels(flags);
  // Every flag is checked above, before the index is opened.
  const store = await openIndexStore(dir, { writable: true, snapshotEvery, compactEvery });
  try {
    const dataset = await openDataset(images, { warn });
    const present = await store.existing(dataset.items.map((item) => item.id));
    const taken = dataset.items.filter((item) => present.has(item.id));
    // With --skip-existing the ids already there are left out: re-running an interrupted add finishes it.
    const manifest = flags.skipExisting === true ? { ...dataset, items: dataset.items.filter((item) => !present.has(item.id)) } : dataset;
    if (flags.skipExisting === true && taken.length > 0) warn(`skipped ${taken.length} item${taken.length === 1 ? '' : 's'} already in index ${dir}`);
    if (flags.skipExisting !== true && taken.length > 0) {
      const listed = taken.slice(0, 3).map((item) => JSON.stringify(item.id)).join(', ');
      throw new DmlError('E_ARG', `${taken.length} item id${taken.length === 1 ? ' is' : 's are'} already in index ${dir}: ${listed}${taken.length > 3 ? ', ...' : ''} (expected new ids; --skip-existing leaves them out)`);
    }
    const { metadata } = store;
    const embedder = await OnnxEmbedder.open(store.modelPath, {
      ...options,
      preprocessing: metadata.preprocessing,
      outputName: metadata.model.outputName,
      // The preprocessing recorded at build time is complete: no config file is looked for.
      preprocessorConfig: false,
      ...(metadata.model.pooling !== undefined ? { pooling: metadata.model.pooling } : {}),
    });
    try {
      if (embedder.modelSha256 !== metadata.model.sha256) {
        throw new DmlError('E_MODEL', `${store.modelPath} has sha256 ${embedder.modelSha256} but index ${dir} was built with ${metadata.model.sha256}`);
      }
      // One pool for all batches: each embedItems call below is a single batch, too small to start one for.
      const processes = decodeProcessCount(manifest.items.length, workers);
      const pool =
        processes > 0
          ? await ImageDecodePool.start({ workers: processes, preprocessing: embedder.preprocessing, ...pixelLimit })
          : undefined;
      const bar = createProgress('adding');
      let added = 0;
      const failures: SkippedImage[] = [];
      try {
        for (let start = 0; start < manifest.items.length; start += embedder.batchSize) {
          const chunk: ManifestItem[] = manifest.items.slice(start, start + embedder.batchSize);
          const { set, failures: skipped } = await embedder.embedItems(chunk, {
            skipBadImages: flags.skipBadImages === true,
            ...pixelLimit,
            ...(pool !== undefined ? { decodePool: pool } : { workers: 0 }),
          });
          failures.push(...skipped);
          if (set.count === 0) continue;
          const sources = new Map(chunk.map((item) => [item.id, item.source]));
          await store.add(
            set.ids.map((id, row) => ({
              id,
              label: set.labels[row] as string,
              vector: set.vectors.slice(row * set.dim, (row + 1) * set.dim),
              image: sources.get(id) as ImageSource,
            })),
          );
          process.stdout.write(set.ids.map((id) => `added ${id}\n`).join(''));
          added += set.count;
          bar.update(Math.min(start + embedder.batchSize, manifest.items.length), manifest.items.length);
        }
      } finally {
        await pool?.close();
      }
      bar.stop();
      reportFailures(failures);
      process.stderr.write(`Added ${added} items (embedded on ${embedder.provider}); index ${dir} holds ${store.count}\n`);
    } finally {
      await embedder.release();
    }
  } finally {
    await store.close();
  }
}

/** `dml index remove <dir> <ids...>`: all or none, one `removed <id>` line per id once on disk. */
export async function runRemove(dir: string, ids: string[]): Promise<void> {
  const store = await openIndexStore(dir, { writable: true });
  try {
    await store.remove(ids);
    for (const id of new Set(ids)) process.stdout.write(`removed ${id}\n`);
  } finally {
    await store.close();
  }
}

/** `dml index optimize <index>`: folds the changes in (see index-store.ts), prints what was done as JSON. */
export async function runOptimize(dir: string, flags: OptimizeFlags): Promise<void> {
  const rebuildAnn = flags.rebuildAnn === true;
  if (rebuildAnn && parseIndexLocation(dir).kind === 'hnsw') {
    throw invalidParameterError('--rebuild-ann', 'a lance:<folder> index (an hnswlib index has no separate ANN index; build a new one to rebuild it)', dir);
  }
  const store = await openIndexStore(dir, { writable: true });
  try {
    const done = await store.optimize({ rebuildAnn });
    process.stdout.write(`${JSON.stringify({ items: store.count, ...done }, null, 2)}\n`);
  } finally {
    await store.close();
  }
}

/** `dml index info <index>`: what the index holds, as JSON on stdout. */
export async function runInfo(dir: string): Promise<void> {
  const store = await openIndexStore(dir);
  try {
    process.stdout.write(`${JSON.stringify(await store.info(), null, 2)}\n`);
  } finally {
    await store.close();
  }
}
