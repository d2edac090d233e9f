/**
 * @file `dml index`: builds and changes the image search index that `dml serve` serves.
 *
 *   dml index build <model.onnx> <images> --out <dir> [options]
 *   dml index add <dir> <images> [options]
 *   dml index remove <dir> <id> [more ids ...]
 *   dml index info <dir>
 *
 * `<images>` is a dataset spec as `dml eval --data` takes it (`folder:path`, `csv:file`,
 * `fashion-mnist:dir`, ...). `build` embeds every item (through the embedding cache), builds the HNSW
 * graph and writes the folder atomically (see lib/index-store/store.ts). `add` and `remove` hold the
 * index's lock, commit in batches and print one `added <id>` / `removed <id>` line per item once it is
 * on disk, so an interrupted run has kept every item it printed. Preprocessing is the model's own
 * (its dml metadata or its input shape), overridden at `build` by the flags `dml eval` takes
 * (`--size`, `--resize`, `--channels`, `--layout`, `--mean`, `--std`); `add` and `serve` reuse what the
 * index recorded. Images are decoded by `--workers` child processes (lib/image/decode-pool.ts); `add`
 * starts one pool for all its batches. The work is in index-run.ts, loaded when a subcommand runs.
 */
import type { Command } from 'commander';
import { DEFAULT_SNAPSHOT_EVERY } from '../index-store/layout.js';
import { addEmbedOptions, POOLING_HELP, type EmbedFlags } from './embed-flags.js';
import { addHnswOptions, type HnswFlags } from './hnsw-flags.js';
import { addPreprocessingOptions, type PreprocessingFlags } from './preprocessing-flags.js';

/** Flags of `dml index build`. */
export interface BuildFlags extends EmbedFlags, HnswFlags, PreprocessingFlags {
  out: string;
  cacheDir: string;
  cache: boolean;
}

/** Flags of `dml index add`. */
export interface AddFlags extends EmbedFlags {
  snapshotEvery: string;
  skipExisting?: boolean;
}

const BATCH_SIZE_HELP = 'images per inference call (and per commit, for add)';

/** Registers `index` and its subcommands on the program. */
export function registerIndexCommand(program: Command): void {
  const index = program.command('index').description('Build and change the image search index that dml serve serves');

  const build = addEmbedOptions(
    addHnswOptions(
      index
        .command('build')
        .description('Embed a dataset with an ONNX model and write an HNSW search index folder')
        .argument('<model>', 'ONNX embedder (copied into the index)')
        .argument('<images>', 'dataset: folder:, csv:, jsonl:, cub:, cars196:, sop:, inshop:, hotels50k:, idx:/mnist:/fashion-mnist: <path>')
        .requiredOption('--out <dir>', 'index folder to create (must not exist, or be empty)')
        .option('--output-name <name>', 'model output holding the embeddings (default: a 2-D output named like an embedding, e.g. image_embeds or pooler_output, else the first)')
        .option('--pooling <kind>', POOLING_HELP),
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
      .argument('<dir>', 'index folder')
      .argument('<images>', 'dataset spec, as for build')
      .option('--snapshot-every <n>', 'fold the journal into a new snapshot after this many commits', String(DEFAULT_SNAPSHOT_EVERY))
      .option('--skip-existing', 'leave out items whose id the index already holds (to finish an interrupted add) instead of failing'),
    BATCH_SIZE_HELP,
  ).action(async (dir: string, images: string, flags: AddFlags) => {
    const { runAdd } = await import('./index-run.js');
    await runAdd(dir, images, flags);
  });

  index
    .command('remove')
    .description('Remove items from an index by id (all or none: every id must be in the index)')
    .argument('<dir>', 'index folder')
    .argument('<ids...>', 'item ids')
    .action(async (dir: string, ids: string[]) => {
      const { runRemove } = await import('./index-run.js');
      await runRemove(dir, ids);
    });

  index
    .command('info')
    .description('Print what an index holds, as JSON')
    .argument('<dir>', 'index folder')
    .action(async (dir: string) => {
      const { runInfo } = await import('./index-run.js');
      await runInfo(dir);
    });
}
