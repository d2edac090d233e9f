/**
 * @file The work of `dml eval` (eval-command.ts declares the command): checks the flags, evaluates the
 * models or the .npy embeddings, prints the table and writes the reports. Loaded only when the command
 * runs.
 */
import path from 'node:path';
import { parseClassList } from '../data/class-split.js';
import { readClassNames } from '../data/class-names.js';
import { DmlError, invalidParameterError } from '../errors.js';
import type { EmbedderOptions } from '../embed/embedder.js';
import type { EmbeddingSet } from '../embed/embedding-set.js';
import { normalizeRowsInPlace } from '../embed/normalize.js';
import { readNpy } from '../embed/npy.js';
import { readEmbeddingSidecar } from '../embed/embedding-files.js';
import { DEFAULT_CLUSTER_COUNTS, parseClusterCountSpecs, type ClusterCountSpec } from '../eval/cluster-counts.js';
import { evaluateEmbeddings, type EvaluateEmbeddingsOptions } from '../eval/evaluate-embeddings.js';
import { evaluateModelFile, openEvaluationDataset, subset, type ItemRole } from '../eval/evaluate-model.js';
import { CLUSTER_SETS, DEFAULT_KS, type IndexParameters } from '../eval/evaluation.js';
import { NeighbourRecorder, neighboursCsv } from '../eval/saved-neighbours.js';
import { KMEANS_INITS } from '../metrics/kmeans-options.js';
import { reportMarkdown } from '../report/markdown.js';
import { reportHtml, reportMarkdownFile } from '../report/sections.js';
import type { RunReport } from '../eval/run-report.js';
import { buildReport, type Report } from '../report/report.js';
import { exampleThumbnails } from '../report/thumbnails.js';
import type { ImageSource } from '../data/manifest.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { printWarning } from './warning.js';
import { checkWritableFile, checkWritableFolder } from './output-checks.js';
import { checkStandardOutput, writeStandardOutput } from '../util/standard-output.js';
import { createProgress, formatSeconds, progressMode, type Progress } from '../util/progress.js';
import {
  parseChoice,
  parseNonNegativeInt,
  parseNonNegativeNumber,
  parseParallelism,
  parsePositiveInt,
  parsePositiveIntList,
  parseSeed,
} from './parse-options.js';
import type { EvalFlags } from './eval-command.js';
import { decodeWorkers, embedderOptions, limitInputPixels, withSkipBadImagesHint } from './embed-flags.js';
import { hnswParameters } from './hnsw-flags.js';
import { preprocessingOverrides } from './preprocessing-flags.js';

/** Prints each warning as one `warning: <message>` line on stderr. */
function printWarnings(warnings: readonly string[]): void {
  for (const message of warnings) printWarning(message);
}

/** `--cluster-counts`, or its old name `--nmi-k` (with a warning on stderr); both at once is a usage error. */
function clusterCountsFlag(flags: EvalFlags): ClusterCountSpec[] {
  if (flags.nmiK === undefined) return parseClusterCountSpecs(flags.clusterCounts.split(',').map((s) => s.trim()), '--cluster-counts');
  if (flags.clusterCounts !== DEFAULT_CLUSTER_COUNTS.join(',')) {
    throw new DmlError('E_ARG', '--nmi-k is the old name of --cluster-counts: give one of them, not both');
  }
  process.stderr.write('warning: --nmi-k is now called --cluster-counts; the old name will go in a later release\n');
  return parseClusterCountSpecs(flags.nmiK.split(',').map((s) => s.trim()), '--nmi-k');
}

/** The files `--out` receives. */
const REPORT_FILES = ['report.json', 'report.md', 'report.html'] as const;

/** Names `--json -`'s report in messages. */
const JSON_TO_STDOUT = 'the report (--json -)';

/** Every file the run will write, each with the flag that asks for it. */
function outputFiles(flags: EvalFlags, models: readonly string[]): Array<{ file: string; flag: string }> {
  const files: Array<{ file: string; flag: string }> = [];
  if (flags.out !== undefined) for (const name of REPORT_FILES) files.push({ file: path.join(flags.out, name), flag: `--out ${flags.out}` });
  if (flags.json !== undefined && flags.json !== '-') files.push({ file: flags.json, flag: `--json ${flags.json}` });
  if (flags.saveNeighbours !== undefined) files.push({ file: flags.saveNeighbours, flag: `--save-neighbours ${flags.saveNeighbours}` });
  if (flags.saveEmbeddings !== undefined) {
    const names = models.map((m) => path.basename(m));
    for (let i = 0; i < models.length; i++) {
      const prefix = savedEmbeddingsPrefix(flags.saveEmbeddings, names, i);
      for (const ext of ['.npy', '.json']) files.push({ file: `${prefix}${ext}`, flag: `--save-embeddings ${flags.saveEmbeddings}` });
    }
  }
  return files;
}

/** Refuses two outputs that would land on the same file (one would overwrite the other). Errors: E_ARG. */
function checkDistinctOutputs(files: ReadonlyArray<{ file: string; flag: string }>): void {
  const seen = new Map<string, string>();
  for (const { file, flag } of files) {
    const key = path.resolve(file);
    const other = seen.get(key);
    if (other !== undefined) throw new DmlError('E_ARG', `${flag} and ${other} would both write ${key} (expected separate output files)`);
    seen.set(key, flag);
  }
}

/** `dml eval`: checks every flag, evaluates each model (or the .npy embeddings), prints the table and writes the reports. */
export async function runEval(models: string[], flags: EvalFlags, argv: string[]): Promise<void> {
  const started = performance.now();
  const usingNpy = flags.queryEmbeddings !== undefined || flags.queryLabels !== undefined;
  if (usingNpy && (models.length > 0 || flags.data !== undefined)) {
    throw invalidParameterError('dml eval', 'either models with --data, or --query-embeddings with --query-labels, not both', argv.join(' '));
  }
  if (!usingNpy && models.length === 0) {
    throw invalidParameterError('dml eval', 'at least one model.onnx (or --query-embeddings)', 'none');
  }
  if (!usingNpy && flags.data === undefined) throw invalidParameterError('--data', 'a dataset such as folder:path/to/images', 'nothing');

  const index: IndexParameters =
    parseChoice(flags.index, ['exact', 'hnsw'] as const, '--index') === 'exact'
      ? { kind: 'exact', chunkSize: parsePositiveInt(flags.chunkSize, '--chunk-size') }
      : { kind: 'hnsw', ...hnswParameters(flags) };
  const seed = parseSeed(flags.seed, '--seed');
  const workers = decodeWorkers(flags);
  const common: EvaluateEmbeddingsOptions = {
    clusterCounts: clusterCountsFlag(flags),
    clusterSet: parseChoice(flags.clusterSet, CLUSTER_SETS, '--cluster-set'),
    index,
    kmeans: {
      maxIterations: parsePositiveInt(flags.kmeansMaxIterations, '--kmeans-max-iterations'),
      tolerance: parseNonNegativeNumber(flags.kmeansTolerance, '--kmeans-tolerance'),
      init: parseChoice(flags.kmeansInit, KMEANS_INITS, '--kmeans-init'),
      restarts: parsePositiveInt(flags.kmeansRestarts, '--kmeans-restarts'),
      seed,
    },
    ...(flags.threads !== undefined ? { threads: parseParallelism(flags.threads, '--threads', 1, printWarning) } : {}),
    examples: { count: parseNonNegativeInt(flags.examples, '--examples') },
    fullRanking: flags.fullRanking,
  };
  const explicitKs = flags.k !== undefined ? parsePositiveIntList(flags.k, '--k') : undefined;
  // Every flag is checked here, before any file is read: a usage error is never masked by a data error.
  const openOptions: EmbedderOptions = {
    ...embedderOptions(flags),
    preprocessing: preprocessingOverrides(flags),
    ...(flags.outputName !== undefined ? { outputName: flags.outputName } : {}),
    ...(flags.preprocessorConfig !== undefined ? { preprocessorConfig: flags.preprocessorConfig } : {}),
  };
  const pixelLimit = limitInputPixels(flags);
  const trainClasses = flags.trainClasses !== undefined ? parseClassList(flags.trainClasses, '--train-classes') : undefined;
  if (flags.saveEmbeddings !== undefined) {
    if (usingNpy) throw invalidParameterError('--save-embeddings', 'a model to embed with (the embeddings given with --query-embeddings are already files)', flags.saveEmbeddings);
    if (!flags.saveEmbeddings.endsWith('.npy') || path.basename(flags.saveEmbeddings) === '.npy') {
      throw invalidParameterError('--save-embeddings', 'a file name ending in .npy', flags.saveEmbeddings);
    }
    await checkWritableFolder(path.dirname(flags.saveEmbeddings), `--save-embeddings ${flags.saveEmbeddings}`);
  }
  if (flags.saveNeighbours !== undefined) {
    if (!flags.saveNeighbours.endsWith('.csv') || path.basename(flags.saveNeighbours) === '.csv') {
      throw invalidParameterError('--save-neighbours', 'a file name ending in .csv', flags.saveNeighbours);
    }
    await checkWritableFile(flags.saveNeighbours, `--save-neighbours ${flags.saveNeighbours}`);
  }
  if (flags.out !== undefined) {
    await checkWritableFolder(flags.out, `--out ${flags.out}`);
    for (const name of REPORT_FILES) await checkWritableFile(path.join(flags.out, name), `--out ${flags.out}`);
  }
  if (flags.json !== undefined && flags.json !== '-') await checkWritableFile(flags.json, `--json ${flags.json}`);
  if (flags.json === '-') checkStandardOutput(JSON_TO_STDOUT);
  checkDistinctOutputs(outputFiles(flags, models));

  const runs: RunReport[] = [];
  /** With --save-neighbours, each run's top-K neighbours, written as one CSV once every run succeeded. */
  const recorders: NeighbourRecorder[] = [];
  const recordNeighbours = (name: string, ks: readonly number[]): Pick<EvaluateEmbeddingsOptions, 'onNeighbours'> => {
    if (flags.saveNeighbours === undefined) return {};
    const recorder = new NeighbourRecorder(name, Math.max(...ks));
    recorders.push(recorder);
    return { onNeighbours: recorder.add };
  };
  /** Where each item's image is, for the examples' thumbnails (none for .npy embeddings). */
  const sources = new Map<string, ImageSource>();
  if (usingNpy) {
    const ks = explicitKs ?? [...DEFAULT_KS];
    const name = path.basename(flags.queryEmbeddings as string);
    const run = await evaluateNpy(flags, { ...common, ks, onProgress: runProgress(name), ...recordNeighbours(name, ks) });
    if (flags.classNames !== undefined) run.dataset.classNames = await readClassNames(flags.classNames, new Set(run.metrics.perClass.map((c) => c.label)));
    runs.push(run);
    printWarnings(run.warnings);
  } else {
    const spec = flags.data as string;
    const { manifest, hash } = await openEvaluationDataset(spec, {
      warn: printWarning,
      ...(flags.hotelsTestSet !== undefined ? { hotelsTestSet: flags.hotelsTestSet } : {}),
      ...(trainClasses !== undefined ? { trainClasses, trainClassesName: '--train-classes' } : {}),
    });
    if (flags.classNames !== undefined) manifest.classNames = await readClassNames(flags.classNames, new Set(manifest.items.map((it) => it.label)));
    for (const item of manifest.items) sources.set(item.id, item.source);
    const ks = explicitKs ?? manifest.defaultK;
    const cacheDir = !flags.cache ? undefined : (flags.cacheDir ?? (flags.out !== undefined ? path.join(flags.out, 'cache') : undefined));
    const names = models.map((m) => path.basename(m));
    for (const [i, model] of models.entries()) {
      const name = names.filter((n) => n === names[i]).length > 1 ? model : (names[i] as string);
      try {
        runs.push(
          await evaluateModelFile(model, openOptions, manifest, {
            ...common,
            ks,
            onProgress: runProgress(name),
            ...recordNeighbours(name, ks),
            datasetSpec: spec,
            manifestHash: hash,
            ...(trainClasses !== undefined ? { trainClasses } : {}),
            ...(cacheDir !== undefined ? { cacheDir } : {}),
            skipBadImages: flags.skipBadImages === true,
            ...(workers !== undefined ? { workers } : {}),
            ...pixelLimit,
            name,
            ...(flags.saveEmbeddings !== undefined ? { saveEmbeddings: savedEmbeddingsPrefix(flags.saveEmbeddings, names, i) } : {}),
          }),
        );
      } catch (err) {
        throw withSkipBadImagesHint(err, flags);
      }
      printWarnings(runs[runs.length - 1]?.warnings ?? []);
    }
  }

  const report = buildReport(runs, ['dml', ...argv]);
  const table = reportMarkdown(report);
  await writeOutputs(report, flags, sources, pixelLimit.limitInputPixels);
  if (flags.saveNeighbours !== undefined) await writeFileAtomic(flags.saveNeighbours, neighboursCsv(recorders));
  if (flags.json === '-') {
    // stdout carries report.json alone, for pipes (`dml eval ... --json - | jq`); the table goes to stderr.
    process.stderr.write(`${table}\n`);
    await writeStandardOutput(`${JSON.stringify(report, null, 2)}\n`, JSON_TO_STDOUT);
  } else {
    process.stdout.write(`${table}\n`);
  }
  if (progressMode() !== 'none') {
    const written = [...outputFiles(flags, models).map((o) => o.file), ...(flags.json === '-' ? ['report.json to standard output'] : [])];
    process.stderr.write(`${evalSummary(runs, written, (performance.now() - started) / 1000)}\n`);
  }
}

/**
 * The progress callback of the run of model `name`: one reporter per stage (from `create`, default
 * {@link createProgress}), labelled with the stage and the model, so the lines of several models tell
 * which is running (`embed (default.onnx): 300/600 (50%), ...`).
 */
export function runProgress(name: string, create: (label: string) => Progress = createProgress): (stage: string, done: number, total: number) => void {
  const stages = new Map<string, Progress>();
  return (stage, done, total) => {
    let bar = stages.get(stage);
    if (!bar) {
      bar = create(`${stage} (${name})`);
      stages.set(stage, bar);
    }
    bar.update(done, total);
    if (done >= total) {
      bar.stop();
      stages.delete(stage);
    }
  };
}

/**
 * The last line of `dml eval` on stderr: the total time, the time of each stage summed over the runs
 * (embed, HNSW build, search, exact reference, k-means; stages that did not run are left out) and the
 * files written. E.g. `dml eval: done in 12.4s (embed 9.8s, search 0.6s, k-means 1.9s); wrote runs/a/report.json, ...`.
 */
export function evalSummary(runs: readonly RunReport[], files: readonly string[], totalSeconds: number): string {
  const stages: Array<[string, keyof RunReport['timings']]> = [
    ['embed', 'embedSeconds'],
    ['hnsw build', 'indexBuildSeconds'],
    ['search', 'searchSeconds'],
    ['exact reference', 'exactReferenceSeconds'],
    ['k-means', 'clusteringSeconds'],
  ];
  const parts = stages.flatMap(([name, key]) => {
    const values = runs.map((r) => r.timings[key]).filter((v): v is number => v !== undefined);
    return values.length === 0 ? [] : [`${name} ${formatSeconds(values.reduce((a, b) => a + b, 0))}`];
  });
  return `dml eval: done in ${formatSeconds(totalSeconds)} (${parts.join(', ')}); ${files.length === 0 ? 'no files written (use --out or --json)' : `wrote ${files.join(', ')}`}`;
}

/**
 * Where `--save-embeddings <file.npy>` puts model `i`'s embeddings, without `.npy`: `<file>` for one
 * model; `<file>.<model name without .onnx>` for several (`-<i+1>` added where names repeat).
 */
export function savedEmbeddingsPrefix(file: string, modelNames: readonly string[], i: number): string {
  const base = file.slice(0, -'.npy'.length);
  if (modelNames.length === 1) return base;
  const stem = (name: string): string => name.replace(/\.onnx$/i, '');
  const own = stem(modelNames[i] as string);
  return modelNames.filter((n) => stem(n) === own).length > 1 ? `${base}.${own}-${i + 1}` : `${base}.${own}`;
}

async function writeOutputs(report: Report, flags: EvalFlags, sources: ReadonlyMap<string, ImageSource>, limitInputPixels: number | undefined): Promise<void> {
  const json = `${JSON.stringify(report, null, 2)}\n`;
  if (flags.out !== undefined) {
    const [jsonFile, markdownFile, htmlFile] = REPORT_FILES;
    await writeFileAtomic(path.join(flags.out, jsonFile), json);
    await writeFileAtomic(path.join(flags.out, markdownFile), reportMarkdownFile(report));
    const thumbnails = await exampleThumbnails(report, sources, { limitInputPixels });
    await writeFileAtomic(path.join(flags.out, htmlFile), reportHtml(report, { thumbnails }));
  }
  if (flags.json !== undefined && flags.json !== '-') await writeFileAtomic(flags.json, json);
}

/** Reads an N x D float .npy as L2-normalised float32 rows. */
async function readEmbeddingsNpy(file: string): Promise<{ vectors: Float32Array; count: number; dim: number }> {
  const npy = await readNpy(file);
  if (npy.shape.length !== 2 || !(npy.data instanceof Float32Array || npy.data instanceof Float64Array)) {
    throw new DmlError('E_EMBEDDING', `${file}: expected a float16, float32 or float64 array of shape (N, D) but found ${npy.dtype} of shape (${npy.shape.join(', ')})`);
  }
  const [count, dim] = npy.shape as [number, number];
  const vectors = npy.data instanceof Float32Array ? npy.data : Float32Array.from(npy.data);
  normalizeRowsInPlace(vectors, count, dim, file);
  return { vectors, count, dim };
}

/** What a labels file gives: the labels, and from a `--save-embeddings` sidecar also the ids and each row's role. */
interface ReadLabels {
  labels: string[];
  ids?: string[];
  roles?: ItemRole[];
  warnings: string[];
}

/**
 * Reads the N labels of `embeddingsFile`: from a .npy (see {@link readLabelsNpy}), or from the .json
 * sidecar `dml eval --save-embeddings` writes beside its .npy (its labels, ids and query/gallery roles).
 */
async function readLabels(file: string, expected: number, embeddingsFile: string): Promise<ReadLabels> {
  if (!file.toLowerCase().endsWith('.json')) return readLabelsNpy(file, expected, embeddingsFile);
  const sidecar = await readEmbeddingSidecar(file);
  if (sidecar.labels.length !== expected) {
    throw new DmlError('E_DATASET', `${file} holds ${sidecar.labels.length} labels but ${embeddingsFile} holds ${expected} embeddings (expected the .json written beside that .npy)`);
  }
  const roles = sidecar.provenance['roles'];
  return { labels: sidecar.labels, ids: sidecar.ids, ...(Array.isArray(roles) && roles.length === expected ? { roles: roles as ItemRole[] } : {}), warnings: [] };
}

/** Reads N labels (integers or strings) as strings; labels of shape (N, 1) are flattened, with a warning. */
async function readLabelsNpy(file: string, expected: number, embeddingsFile: string): Promise<ReadLabels> {
  const npy = await readNpy(file);
  if (npy.shape.length !== 1 && !(npy.shape.length === 2 && npy.shape[1] === 1)) {
    throw new DmlError('E_DATASET', `${file}: expected a 1-D label array but found shape (${npy.shape.join(', ')})`);
  }
  if (npy.data instanceof Float32Array || npy.data instanceof Float64Array) {
    throw new DmlError('E_DATASET', `${file}: labels must be integers or strings, found ${npy.dtype}`);
  }
  const labels = Array.from(npy.data as ArrayLike<number | bigint | string>, (v) => String(v));
  if (labels.length !== expected) {
    throw new DmlError('E_DATASET', `${file} holds ${labels.length} labels but ${embeddingsFile} holds ${expected} embeddings`);
  }
  const warnings =
    npy.shape.length === 2
      ? [`${file}: labels of shape (${npy.shape.join(', ')}) were flattened to ${labels.length} labels, one per row; save them with shape (${labels.length},) to silence this`]
      : [];
  return { labels, warnings };
}

async function evaluateNpy(flags: EvalFlags, options: EvaluateEmbeddingsOptions): Promise<RunReport> {
  if (flags.queryEmbeddings === undefined || flags.queryLabels === undefined) {
    throw invalidParameterError('--query-embeddings/--query-labels', 'both files', 'only one');
  }
  if ((flags.galleryEmbeddings === undefined) !== (flags.galleryLabels === undefined)) {
    throw invalidParameterError('--gallery-embeddings/--gallery-labels', 'both files or neither', 'only one');
  }
  const warnings: string[] = [];
  const load = async (emb: string, lab: string, prefix: string): Promise<{ set: EmbeddingSet; roles?: ItemRole[] }> => {
    const e = await readEmbeddingsNpy(emb);
    const read = await readLabels(lab, e.count, emb);
    warnings.push(...read.warnings);
    return { set: { ...e, labels: read.labels, ids: read.ids ?? Array.from({ length: e.count }, (_, i) => `${prefix}${i}`) }, ...(read.roles ? { roles: read.roles } : {}) };
  };
  const loaded = await load(flags.queryEmbeddings, flags.queryLabels, 'q');
  let query = loaded.set;
  let gallery = flags.galleryEmbeddings !== undefined ? (await load(flags.galleryEmbeddings, flags.galleryLabels as string, 'g')).set : null;
  // A saved set whose rows have separate query and gallery roles is evaluated as its dataset was.
  const roles = gallery === null ? loaded.roles : undefined;
  const split = roles !== undefined && roles.some((r) => r !== 'query+gallery');
  if (split) {
    const all = query;
    query = subset(all, (r) => roles[r] !== 'gallery');
    gallery = subset(all, (r) => roles[r] !== 'query');
  }
  const evaluation = await evaluateEmbeddings(query, gallery, options);
  const spec = flags.galleryEmbeddings !== undefined ? `${flags.queryEmbeddings} vs ${flags.galleryEmbeddings}` : flags.queryEmbeddings;
  return {
    name: path.basename(flags.queryEmbeddings),
    dataset: {
      spec,
      layout: 'npy',
      protocol: split ? `the query and gallery rows of ${flags.queryLabels}` : gallery ? 'separate query and gallery embeddings' : 'query set = gallery set',
      queryCount: query.count,
      galleryCount: gallery?.count ?? query.count,
      sameSet: evaluation.sameSet,
      skippedImages: [],
    },
    metrics: evaluation.metrics,
    parameters: evaluation.parameters,
    timings: evaluation.timings,
    examples: evaluation.examples,
    diagnostics: evaluation.diagnostics,
    warnings: [...warnings, ...evaluation.warnings],
  };
}
