/**
 * @file Paper 004's class-collapse experiment (Levi et al., EPS; docs/methods.md section 5; issue 5) on
 * Fashion-MNIST: train on coarse labels, evaluate on the fine ones. All ten classes' training images
 * (the training IDX file, seeded sample of 6,000) are labelled by group, tops = {0 T-shirt, 2 pullover,
 * 4 coat, 6 shirt}, footwear = {5 sandal, 7 sneaker, 9 ankle boot}, other = {1 trouser, 3 dress, 8 bag}
 * (`data.trainLabelGroups`); validation is all 10,000 images of the test IDX file (the same ten
 * classes, `data.trainClasses` unset: the dataset's own split) with their fine labels. An embedding
 * that collapses each group into one cluster scores high on the coarse labels and low on the fine
 * ones, most visibly on NMI with more clusters than groups (the NMI+ curve).
 *
 * Methods: triplet with semi-hard negatives (`triplet-margin`, miner semihard, margin 0.2 on squared
 * distances, as Roth et al.'s triplet of paper 004, but every positive of an anchor instead of one
 * random one) against EPS + triplet (`eps-triplet`: the easy positive, a sampled semi-hard negative,
 * margin 0.2 on squared distances). Budget and architecture as scripts/configs/fashion-mnist-mlp.json
 * (MLP 784-256-16 + L2, Adam 1e-3, filled sampler 5 groups of 16 = 80, 3 epochs, 6,000 training images).
 *
 * Per method, mean ± sample standard deviation over seeds (and min-max) of the last epoch's fine-label
 * Recall@1, NMI at 10 clusters (the fine label count), the NMI+ curve (k-means with 1x, 2x, 5x, 10x,
 * 30x the ten fine labels; NMI+ proper is 10x = 100 clusters, docs/methods.md 5.4), and the coarse-label
 * Recall@1 of the same test embeddings (the final checkpoint re-embeds the test file, labels mapped to
 * groups). "Untrained" is epoch 0 of the same runs. Writes runs/class-collapse/table.md and table.json
 * (every run's numbers) atomically and prints the Markdown table.
 *
 *   npx tsx scripts/experiments/class-collapse.ts [--seeds 3] [--out runs/class-collapse] [--data <dir with the IDX files>] [--backend <name>]
 *                                     [--max-train-items N] [--epochs N]   (smoke runs only)
 *
 * Needs the Fashion-MNIST IDX files (Debian: `apt-get install -y dataset-fashion-mnist`, installed
 * under /usr/share/datasets/fashion-mnist), or any copy given with --data.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { ManifestItem } from '../../lib/data/manifest.js';
import { openDataset } from '../../lib/data/open-dataset.js';
import { DEFAULT_CLUSTER_COUNTS, NMI_PLUS_SPEC, resolveClusterCounts } from '../../lib/eval/cluster-counts.js';
import { evaluateEmbeddings } from '../../lib/eval/evaluate-embeddings.js';
import type { Preprocessing } from '../../lib/image/preprocessing.js';
import { loadCheckpoint } from '../../lib/train/checkpoint-io.js';
import { parseTrainConfig, type TrainConfigInput } from '../../lib/train/config.js';
import { buildModel } from '../../lib/train/models/build-model.js';
import type { ModelSpec } from '../../lib/train/models/model-spec.js';
import type { ValidationRecord } from '../../lib/train/epoch-record.js';
import { train } from '../../lib/train/trainer.js';
import { preloadImages, type TrainingData } from '../../lib/train/training-data.js';
import { writeFileAtomic } from '../../lib/util/atomic-write.js';
import { argument, integerArgument, lastValidation, summary } from './table-support.js';

/** The coarse training labels (Fashion-MNIST class numbers). */
const GROUPS = { tops: [0, 2, 4, 6], footwear: [5, 7, 9], other: [1, 3, 8] };

/** The two methods: a row name, the run folder's name and the loss spec. */
const METHODS: Array<{ name: string; key: string; loss: Record<string, unknown> }> = [
  { name: 'Triplet, semi-hard negatives', key: 'triplet-semihard', loss: { name: 'triplet-margin', miner: 'semihard', margin: 0.2, distance: 'squared-euclidean' } },
  { name: 'EPS + triplet, semi-hard negatives (paper 004)', key: 'eps-triplet', loss: { name: 'eps-triplet' } },
];

/** All 10,000 test images: the validation set is exactly these (see `checkSameSet`). */
const VALIDATION_ITEMS = 10000;

/** The numbers of one state (untrained or trained) of one run; percentages. */
interface Scores {
  fineRecall1: number;
  /** NMI (fine labels) per cluster count, keyed by the count. */
  nmi: Record<string, number>;
  nmiPlus: number;
  coarseRecall1: number;
}

/** Fine-label scores of a validation record plus the coarse Recall@1 computed separately. */
function scoresOf(v: ValidationRecord, coarseRecall1: number): Scores {
  if (v.nmiPlus === null) throw new Error('the validation has no NMI+ (10x) point');
  return {
    fineRecall1: 100 * (v.recall['1'] ?? Number.NaN),
    nmi: Object.fromEntries(v.nmiCurve.map((p) => [String(p.clusters), 100 * p.nmi])),
    nmiPlus: 100 * v.nmiPlus,
    coarseRecall1,
  };
}

/** Recall@1 (%) of `model`'s embeddings of the test images against their coarse (group) labels. */
async function coarseRecall1(model: tf.LayersModel, test: TrainingData, groupOf: Map<string, string>): Promise<number> {
  const output = tf.tidy(() => model.predict(tf.tensor(test.inputs, [test.count, ...(model.inputs[0]?.shape.slice(1) as number[])])) as tf.Tensor2D);
  const dim = output.shape[1];
  const vectors = output.dataSync() as Float32Array;
  output.dispose();
  const labels = Array.from(test.labels, (code) => groupOf.get(test.labelNames[code] as string) as string);
  const { metrics } = await evaluateEmbeddings({ vectors, count: test.count, dim, ids: test.ids, labels }, null, {
    ks: [1],
    clusterCounts: ['1x'],
    clusterSet: 'union',
    index: { kind: 'exact', chunkSize: 512 },
    kmeans: { seed: 0 },
  });
  return 100 * (metrics.recall['1'] as number);
}

async function main(): Promise<void> {
  const seeds = integerArgument('--seeds', 3) as number;
  const out = argument('--out', 'runs/class-collapse');
  const data = argument('--data', '/usr/share/datasets/fashion-mnist');
  const file = JSON.parse(readFileSync('scripts/configs/fashion-mnist-mlp.json', 'utf8')) as TrainConfigInput;
  const { trainClasses: _classDisjoint, ...fileData } = file.data;
  const base: TrainConfigInput = {
    ...file,
    data: { ...fileData, dataset: `fashion-mnist:${data}`, trainLabelGroups: GROUPS, maxTrainItems: integerArgument('--max-train-items', file.data.maxTrainItems) },
    epochs: integerArgument('--epochs', file.epochs) as number,
    backend: argument('--backend', file.backend ?? 'auto') as TrainConfigInput['backend'],
    validation: { ...file.validation, maxItems: VALIDATION_ITEMS, clusterCounts: [...DEFAULT_CLUSTER_COUNTS] },
  };
  const groupOf = new Map(Object.entries(GROUPS).flatMap(([group, classes]) => classes.map((c) => [String(c), group] as const)));
  const testItems: ManifestItem[] = (await openDataset(base.data.dataset)).items.filter((it) => it.split === 'test');
  let test: TrainingData | undefined;
  const testImages = async (preprocessing: Preprocessing): Promise<TrainingData> => {
    test ??= await preloadImages(testItems, preprocessing, 'test set');
    return test;
  };

  const rows: Array<{ method: string; key: string; seed: number; untrained: Scores; trained: Scores; seconds: number }> = [];
  for (const method of METHODS) {
    for (let seed = 0; seed < seeds; seed++) {
      const config = parseTrainConfig({ ...base, loss: method.loss as TrainConfigInput['loss'], seed, out: path.join(out, `${method.key}-seed${seed}`) }, 'class-collapse config');
      const start = performance.now();
      const result = await train(config, { log: (line) => console.error(`[${method.name}, seed ${seed}] ${line}`) });
      const seconds = (performance.now() - start) / 1000;
      const images = await testImages(result.preprocessing);
      const first = result.history[0]?.validation;
      const last = lastValidation(result.history);
      if (!first || first.queryCount !== images.count || last.queryCount !== images.count) {
        throw new Error(`the validation set (${last.queryCount} items) is not the ${images.count} test images`);
      }
      const untrainedModel = await buildModel(config.model as ModelSpec, seed);
      const trainedModel = (await loadCheckpoint(path.join(result.out, 'checkpoints/last'))).model;
      rows.push({
        method: method.name,
        key: method.key,
        seed,
        untrained: scoresOf(first, await coarseRecall1(untrainedModel, images, groupOf)),
        trained: scoresOf(last, await coarseRecall1(trainedModel, images, groupOf)),
        seconds,
      });
      untrainedModel.dispose();
      trainedModel.dispose();
    }
  }

  const counts = Object.keys(rows[0]?.trained.nmi ?? {}).map(Number).sort((a, b) => a - b);
  // NMI+ proper: 10x the ten fine labels (as nmiPlusOf reads it off the curve).
  const nmiPlusClusters = Math.max(...resolveClusterCounts([NMI_PLUS_SPEC], 10, testItems.length));
  const columns: Array<{ title: string; value: (s: Scores) => number }> = [
    { title: 'fine R@1', value: (s) => s.fineRecall1 },
    ...counts.map((k) => ({ title: k === nmiPlusClusters ? `NMI+ k=${k}` : `NMI k=${k}`, value: (s: Scores) => s.nmi[String(k)] as number })),
    { title: 'coarse R@1', value: (s) => s.coarseRecall1 },
  ];
  const line = (name: string, scores: Scores[]): string => `| ${name} | ${columns.map((c) => summary(scores.map(c.value))).join(' | ')} |`;
  const lines = [
    `| model (${seeds} seed${seeds === 1 ? '' : 's'}) | ${columns.map((c) => c.title).join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|`,
    line('untrained (epoch 0 of every run)', rows.map((r) => r.untrained)),
    ...METHODS.map((m) => line(m.name, rows.filter((r) => r.key === m.key).map((r) => r.trained))),
  ];
  const table = `${lines.join('\n')}\n`;
  process.stdout.write(table);
  await writeFileAtomic(path.join(out, 'table.md'), table);
  await writeFileAtomic(path.join(out, 'table.json'), `${JSON.stringify({ config: base, groups: GROUPS, methods: METHODS, rows }, null, 2)}\n`);
}

await main();
