/**
 * @file `dml index`: builds and changes the image search index that `dml serve` serves.
 *
 *   dml index build <model.onnx> <images> --out <index> [options]
 *   dml index add <index> <images> [options]
 *   dml index remove <index> <id> [more ids ...]
 *   dml index optimize <index>
 *   dml index info <index>
 *
 * `<index>` is a folder (the hnswlib store: the graph in memory, a journal on disk) or
 * `lance:<folder>` (the LanceDB store, searched on disk; needs the optional `@lancedb/lancedb`); see
 * lib/index-store/index-store.ts.
 * `<images>` is a dataset spec as `dml eval --data` takes it (`folder:path`, `csv:file`,
 * `fashion-mnist:dir`, ...). `build` embeds every item (through the embedding cache), builds the HNSW
 * graph or the LanceDB table and writes the folder atomically. `add` and `remove` hold the
 * index's lock, commit in batches and print one `added <id>` / `removed <id>` line per item once it is
 * on disk, so an interrupted run has kept every item it printed. Preprocessing is the model's own
 * (its dml metadata or its input shape), overridden at `build` by the flags `dml eval` takes
 * (`--size`, `--resize`, `--channels`, `--layout`, `--mean`, `--std`); `add` and `serve` reuse what the
 * index recorded. Images are decoded by `--workers` child processes (lib/image/decode-pool.ts); `add`
 * starts one pool for all its batches. `optimize` folds the changes into the search structure off the
 * serving path. The work is in index-run.ts, loaded when a subcommand runs.
 */
import type { Command } from 'commander';
import { DEFAULT_SNAPSHOT_EVERY } from '../index-store/layout.js';
import { DEFAULT_COMPACT_EVERY } from '../index-store/lance-store.js';
import { addEmbedOptions, POOLING_HELP, type EmbedFlags } from './embed-flags.js';
import { addHnswOptions, type HnswFlags } from './hnsw-flags.js';
import { addLanceOptions, type LanceFlags } from './lance-flags.js';
import { addPreprocessingOptions, type PreprocessingFlags } from './preprocessing-flags.js';

/** Flags of `dml index build`. */
export interface BuildFlags extends EmbedFlags, HnswFlags, LanceFlags, PreprocessingFlags {
  out: string;
  cacheDir: string;
  cache: boolean;
}

/** Flags of `dml index optimize`. */
export interface OptimizeFlags {
  rebuildAnn?: boolean;
}

/** Flags of `dml index add`. */
export interface AddFlags extends EmbedFlags {
  snapshotEvery: string;
  compactEvery: string;
  skipExisting?: boolean;
}

const BATCH_SIZE_HELP = 'images per inference call (and per commit, for add)';

/** How the `<index>` argument is described. */
const INDEX_ARG = 'index: a folder (hnswlib store) or lance:<folder> (LanceDB store)';

/** Registers `index` and its subcommands on the program. */
export function registerIndexCommand(program: Command): void {
  const index = program.command('index').description('Build and change the image search index that dml serve serves');

  const build = addEmbedOptions(
    addLanceOptions(
      addHnswOptions(
        index
          .command('build')
          .description('Embed a dataset with an ONNX model and write a search index (hnswlib folder, or LanceDB table with lance:)')
          .argument('<model>', 'ONNX embedder (copied into the index)')
          .argument('<images>', 'dataset: folder:, csv:, jsonl:, cub:, cars196:, sop:, inshop:, hotels50k:, idx:/mnist:/fashion-mnist: <path>')
          .requiredOption('--out <index>', 'index to create: a folder (hnswlib store) or lance:<folder> (LanceDB store); the folder must not exist, or be empty')
          .option('--output-name <name>', 'model output holding the embeddings (default: a 2-D output named like an embedding, e.g. image_embeds or pooler_output, else the first)')
          .option('--pooling <kind>', POOLING_HELP),
      ),
    )
      .option('--seed <n>', 'seed of the HNSW level generator', '0')
      .option('--cache-dir <dir>', 'embedding cache folder', '.dml-cache/embeddings')
      .option('--no-cache', 'do not read or write the embedding cache'),
    BATCH_SIZE_HELP,
  );
  // The preprocessing chosen at build time is recorded in the index; add and serve reuse it.
  addPreprocessingOptions(build).action(async (model: string, images: string, flags: BuildFlags) => {
    const { runBuild } = await import('./index-run.js');
    await runBuild(model, images, flags);
  });

  addEmbedOptions(
    index
      .command('add')
      .description('Embed the items of a dataset and add them to an index (ids must be new)')
      .argument('<index>', INDEX_ARG)
      .argument('<images>', 'dataset spec, as for build')
      .option('--snapshot-every <n>', 'hnswlib store: fold the journal into a new snapshot after this many commits', String(DEFAULT_SNAPSHOT_EVERY))
      .option('--compact-every <n>', 'LanceDB store: compact the table\'s data files after this many commits (and at the end)', String(DEFAULT_COMPACT_EVERY))
      .option('--skip-existing', 'leave out items whose id the index already holds (to finish an interrupted add) instead of failing'),
    BATCH_SIZE_HELP,
  ).action(async (dir: string, images: string, flags: AddFlags) => {
    const { runAdd } = await import('./index-run.js');
    await runAdd(dir, images, flags);
  });

  index
    .command('remove')
    .description('Remove items from an index by id (all or none: every id must be in the index)')
    .argument('<index>', INDEX_ARG)
    .argument('<ids...>', 'item ids')
    .action(async (dir: string, ids: string[]) => {
      const { runRemove } = await import('./index-run.js');
      await runRemove(dir, ids);
    });

  index
    .command('optimize')
    .description('Fold changes into the search structure off the serving path (hnswlib: a snapshot; LanceDB: compaction, ANN index update, version pruning); prints what was done as JSON')
    .argument('<index>', INDEX_ARG)
    .option('--rebuild-ann', 'LanceDB store: train the ANN index again from all rows instead of adding the new rows to it')
    .action(async (dir: string, flags: OptimizeFlags) => {
      const { runOptimize } = await import('./index-run.js');
      await runOptimize(dir, flags);
    });

  index
    .command('info')
    .description('Print what an index holds, as JSON')
    .argument('<index>', INDEX_ARG)
    .action(async (dir: string) => {
      const { runInfo } = await import('./index-run.js');
      await runInfo(dir);
    });
}
