/**
 * @file `dml eval`: scores ONNX embedders on a dataset, or embeddings computed elsewhere (.npy).
 *
 *   dml eval model.onnx [more.onnx ...] --data <layout:path> [options]
 *   dml eval --query-embeddings q.npy --query-labels ql.npy [--gallery-embeddings g.npy --gallery-labels gl.npy]
 *
 * Prints a Markdown table on stdout and progress on stderr; writes report.json, report.md and
 * report.html into --out, and/or report.json to --json. Nothing is written before the evaluation has
 * succeeded, and every file is written atomically. The work is in eval-run.ts, loaded when the
 * command runs.
 */
import { Option, type Command } from 'commander';
import { DEFAULT_CLUSTER_COUNTS } from '../eval/cluster-counts.js';
import { DEFAULT_EXAMPLES } from '../eval/retrieval-examples.js';
import { DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE } from '../metrics/kmeans-options.js';
import { addEmbedOptions, POOLING_HELP, type EmbedFlags } from './embed-flags.js';
import { addHnswOptions, type HnswFlags } from './hnsw-flags.js';
import { addPreprocessingOptions, type PreprocessingFlags } from './preprocessing-flags.js';

/** Raw option values as commander hands them over (strings until parsed). */
export interface EvalFlags extends EmbedFlags, HnswFlags, PreprocessingFlags {
  data?: string;
  trainClasses?: string;
  classNames?: string;
  hotelsTestSet?: string;
  queryEmbeddings?: string;
  queryLabels?: string;
  galleryEmbeddings?: string;
  galleryLabels?: string;
  k?: string;
  clusterCounts: string;
  /** The old name of `--cluster-counts`, still accepted (with a warning). */
  nmiK?: string;
  clusterSet: string;
  kmeansMaxIterations: string;
  kmeansTolerance: string;
  kmeansInit: string;
  kmeansRestarts: string;
  index: string;
  chunkSize: string;
  out?: string;
  json?: string;
  saveEmbeddings?: string;
  saveNeighbours?: string;
  examples: string;
  cacheDir?: string;
  cache: boolean;
  fullRanking: boolean;
}

/** Registers `eval` on the program. */
export function registerEvalCommand(program: Command, commandLine: string[]): void {
  const command = program
    .command('eval')
    .description('Evaluate ONNX embedders (or precomputed embeddings): Recall@K, R-Precision, MAP@R, NMI, NMI+, F1')
    .argument('[models...]', 'ONNX embedders to evaluate side by side')
    .option('--data <layout:path>', 'dataset: folder:, csv:, jsonl:, cub:, cars196:, sop:, inshop:, hotels50k:, idx:/mnist:/fashion-mnist: <path> (required with models)')
    .option('--train-classes <labels>', 'class-disjoint split: these labels (e.g. 0-4) are training classes, the rest is evaluated')
    .option('--class-names <file>', 'names for numbered labels, shown in the reports: one name per line (line i names label i, from 0) or a .json object of label -> name (default: the dataset\'s own, e.g. Fashion-MNIST\'s; else none)')
    .option('--hotels-test-set <name>', 'Hotels-50K query set: unoccluded, low_occlusions, medium_occlusions, high_occlusions')
    .option('--query-embeddings <file.npy>', 'precomputed query embeddings, float N x D (required without models)')
    .option('--query-labels <file.npy>', 'labels of the query embeddings: a .npy of N integers or strings, or the .json that --save-embeddings writes beside its .npy (its ids and query/gallery roles too) (required with --query-embeddings)')
    .option('--gallery-embeddings <file.npy>', 'precomputed gallery embeddings (default: query set = gallery set)')
    .option('--gallery-labels <file.npy>', 'labels of the gallery embeddings')
    .option('--k <list>', "Recall@K values (default: the dataset protocol's, else 1,2,4,8)")
    .option('--cluster-counts <list>', 'cluster counts of the NMI curve: integers or multiples of the label count (NMI+ is the 10x point)', DEFAULT_CLUSTER_COUNTS.join(','))
    .addOption(new Option('--nmi-k <list>', 'old name of --cluster-counts').hideHelp())
    .option('--cluster-set <set>', 'embeddings clustered for NMI/F1: union (queries and gallery, each item once), query or gallery (the In-shop convention)', 'union')
    .option('--kmeans-max-iterations <n>', 'cap on Lloyd iterations per k-means run', String(DEFAULT_MAX_ITERATIONS))
    .option('--kmeans-tolerance <t>', 'k-means stops when an iteration lowers the inertia by at most this fraction (0: run to a fixed point)', String(DEFAULT_TOLERANCE))
    .option('--kmeans-init <method>', 'k-means seeding: k-means++ (D² sampling in rounds), greedy-k-means++ (scikit-learn\'s: best of 2 + ln k draws per centroid; slower, its NMI) or random', 'k-means++')
    .option('--kmeans-restarts <n>', 'k-means restarts (the lowest inertia is kept)', '1')
    .option('--index <kind>', 'exact (chunked GEMM + top-k: no recall loss, and the faster one unless the gallery is very large) or hnsw (approximate, for galleries of hundreds of thousands of items; its recall against exact search is reported; ef is raised to R + 1 for MAP@R, with a warning)', 'exact')
    .option('--chunk-size <n>', 'queries per exact-search chunk (memory: chunk x gallery floats)', '512')
    .option('--seed <n>', 'seed of k-means and HNSW', '0')
    .option('--out <dir>', 'write report.json, report.md, report.html (and the embedding cache) here')
    .option('--json <file>', 'write report.json to this file (- for stdout: then the table goes to stderr)')
    .option('--save-embeddings <file.npy>', 'also write the evaluated items\' embeddings: <file>.npy (float32 N x D, L2-normalised) and <file>.json (ids, labels, query/gallery roles, provenance); with several models <file>.<model>.npy each')
    .option('--save-neighbours <file.csv>', 'also write every query\'s top K neighbours (K = the largest --k) as CSV, one row per model, query and rank: model, query_id, query_label, rank, neighbour_id, neighbour_label, similarity, correct (pandas: pd.read_csv)')
    .option('--examples <n>', 'retrieval examples in the reports: n seeded random queries (the same for every model) and each model\'s n worst queries (lowest AP@R); 0 for none', String(DEFAULT_EXAMPLES))
    .option('--cache-dir <dir>', 'embedding cache folder (default: <out>/cache when --out is given)')
    .option('--no-cache', 'do not read or write the embedding cache')
    .option('--no-full-ranking', 'skip MRR and mAP over the whole ranking (they read every query\'s similarity to every gallery item: about as much time again as the search, several times it for classes of thousands of items)')
    .option('--output-name <name>', 'model output holding the embeddings (default: a 2-D output named like an embedding, e.g. image_embeds or pooler_output, else the first)')
    .option('--pooling <kind>', POOLING_HELP);
  addPreprocessingOptions(addEmbedOptions(addHnswOptions(command)))
    .action(async (models: string[], flags: EvalFlags) => {
      const { runEval } = await import('./eval-run.js');
      await runEval(models, flags, commandLine);
    });
}
